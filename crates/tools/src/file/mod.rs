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

use crate::{OperationDef, ToolDef};

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

pub use toolbelt_mcp_core::units::human_size;
