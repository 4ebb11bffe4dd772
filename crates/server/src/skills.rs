//! The Skills extension (SEP-2640): one skill, `skill://toolbelt/SKILL.md`, that teaches a model
//! how to use these tools well (when to prefer them over a host's own, paging, undo, asking).

use rmcp::model::{Skill, SkillFrontmatter, SkillResource, SkillResources};

/// The URI of the skill's one file.
pub(crate) const SKILL_URI: &str = "skill://toolbelt/SKILL.md";

/// The skill's `SKILL.md`, frontmatter included.
pub(crate) const SKILL_MD: &str = include_str!("../skills/toolbelt/SKILL.md");

/// The skill as `skills/list` and `skills/get` give it: its frontmatter and its one file's digest.
pub(crate) fn skill() -> Skill {
    let (name, description) = frontmatter(SKILL_MD);
    let file = SkillResource::from_bytes(SKILL_URI, SKILL_MD.as_bytes());
    Skill::new(SKILL_URI, SkillFrontmatter::new(name, description), SkillResources::Files(vec![file]))
}

/// `name` and `description` of a `---` frontmatter block.
fn frontmatter(text: &str) -> (String, String) {
    let block = text.strip_prefix("---\n").and_then(|rest| rest.split("\n---").next()).unwrap_or_default();
    let field = |key: &str| {
        block
            .lines()
            .find_map(|line| line.strip_prefix(key)?.strip_prefix(':'))
            .map(str::trim)
            .unwrap_or_default()
            .to_string()
    };
    (field("name"), field("description"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_skill_is_valid_and_names_itself() {
        let skill = skill();
        assert_eq!(skill.name(), "toolbelt");
        assert!(skill.frontmatter.description.starts_with("How to use the toolbelt-mcp tools well"));
        skill.validate().unwrap();
        let SkillResources::Files(files) = &skill.resources else { panic!("a list of files") };
        files[0].verify(SKILL_MD.as_bytes()).unwrap();
        assert!(SKILL_MD.len() < 8 * 1024, "short enough to read before a task: {} bytes", SKILL_MD.len());
    }
}
