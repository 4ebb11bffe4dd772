//! The published listings (`schemas/`), embedded at build time and served as they are, so a
//! server builds no schema at start: `schemas/` is generated from the registry by
//! `toolbelt-mcp schemas`, and the golden test (`schemas --check`) and the test below keep the
//! two equal.

use crate::spec::ToolSpec;
use crate::{EffectKind, TOOLS};
use toolbelt_mcp_core::config::args::ToolLayout;

/// The consolidated listing, in `TOOLS` order.
const CONSOLIDATED: [&str; 4] = [
    include_str!("../../../schemas/file_operations.json"),
    include_str!("../../../schemas/terminal_operations.json"),
    include_str!("../../../schemas/todo_operations.json"),
    include_str!("../../../schemas/memory_operations.json"),
];

/// The granular listing: one tool per operation.
const GRANULAR: &str = include_str!("../../../schemas/granular.json");

/// The listing of `layout` with every operation, as published; `None` where the published
/// files do not describe this build (Windows offers no PTY operations) or do not parse, and
/// the caller generates it from the registry.
pub(crate) fn listing(layout: ToolLayout) -> Option<Vec<ToolSpec>> {
    if cfg!(windows) {
        return None;
    }
    let mut specs: Vec<ToolSpec> = match layout {
        ToolLayout::Consolidated => {
            CONSOLIDATED.iter().map(|text| serde_json::from_str(text)).collect::<Result<_, _>>().ok()?
        }
        ToolLayout::Granular => serde_json::from_str(GRANULAR).ok()?,
    };
    if layout == ToolLayout::Consolidated {
        // `_meta`'s read-only operations are not in the published files: from the registry.
        for (spec, tool) in specs.iter_mut().zip(TOOLS) {
            spec.read_only_operations =
                tool.operations.iter().filter(|op| matches!(op.kind, EffectKind::Read)).map(|op| op.name).collect();
        }
    }
    Some(specs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn embedded_listings_equal_the_generated_ones() {
        use crate::spec::generate;
        for layout in [ToolLayout::Consolidated, ToolLayout::Granular] {
            let embedded = listing(layout).expect("the published files parse");
            let generated = generate(layout, crate::spec::Listing::PUBLISHED).unwrap();
            assert_eq!(embedded, generated, "run `cargo run -- schemas` and commit `schemas/`");
            let names: Vec<&str> = embedded.iter().map(|spec| spec.name.as_str()).collect();
            let expected: Vec<&str> = generated.iter().map(|spec| spec.name.as_str()).collect();
            assert_eq!(names, expected);
        }
    }

    #[test]
    #[cfg(windows)]
    fn windows_generates_its_own_listing() {
        assert!(listing(ToolLayout::Consolidated).is_none());
    }
}
