//! `file_operations`: browse, search and read files inside the roots.

mod apply_patch;
mod changes;
mod create_directory;
mod create_file;
mod delete_file;
mod edit;
mod file_search;
mod glob;
mod grep_search;
mod insert_lines;
mod list_dir;
mod matching;
mod multi_replace;
mod patch;
mod read_file;
mod rename_file;
mod replace_string;
mod undo;

use crate::tools::{OperationDef, ToolDef};

/// The `file_operations` tool and its operations, in listing order.
pub const TOOL: ToolDef = ToolDef {
    name: "file_operations",
    title: "File operations",
    summary: "Read, search and edit workspace files. Paths are relative to the first root; writes are atomic, undoable and return a diff.",
    operations: &[
        OperationDef::of::<read_file::ReadFile>(),
        OperationDef::of::<list_dir::ListDir>(),
        OperationDef::of::<file_search::FileSearch>(),
        OperationDef::of::<grep_search::GrepSearch>(),
        OperationDef::of::<create_file::CreateFile>(),
        OperationDef::of::<replace_string::ReplaceString>(),
        OperationDef::of::<multi_replace::MultiReplace>(),
        OperationDef::of::<insert_lines::InsertLines>(),
        OperationDef::of::<apply_patch::ApplyPatch>(),
        OperationDef::of::<rename_file::RenameFile>(),
        OperationDef::of::<delete_file::DeleteFile>(),
        OperationDef::of::<create_directory::CreateDirectory>(),
        OperationDef::of::<undo::Undo>(),
        OperationDef::of::<changes::Changes>(),
    ],
    granular_prefix: "",
};

/// `1.2 KiB`-style sizes for the model.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        let mut size = String::with_capacity(22);
        crate::tools::push_decimal(&mut size, bytes);
        size.push_str(" B");
        size
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn human_size_picks_units() {
        assert_eq!(super::human_size(0), "0 B");
        assert_eq!(super::human_size(12), "12 B");
        assert_eq!(super::human_size(1023), "1023 B");
        assert_eq!(super::human_size(1536), "1.5 KiB");
        assert_eq!(super::human_size(5 * 1024 * 1024), "5.0 MiB");
    }
}
