//! The code-bearing paths that are known by name, kept as data with the reason for each: the
//! configs of agent hosts, editors, hook managers and build tools that make a program run
//! something when the folder is opened, entered or built, shell startup files, and (when a
//! root holds the home directory) the user's own configs that run programs. Git's own files
//! are judged by what they are (`gitdir.rs`), not by name; the server's own files by path.
//!
//! Reviewed against each tool's documentation; `docs/SECURITY.md` prints this table.

use super::Protection;

/// What a rule's path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One file (or whatever is at that name).
    File,
    /// A directory and everything beneath it.
    Tree,
}

/// One code-bearing path, looked for in any directory of a root, at any depth (a project, a
/// subproject, a dotfiles repository, a home directory).
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// The path, relative to the directory it is found in (`/`-separated).
    pub path: &'static str,
    /// A file, or a directory and all it holds.
    pub shape: Shape,
    /// Its class.
    pub protection: Protection,
    /// Who runs what because of it.
    pub reason: &'static str,
}

const fn rule(path: &'static str, shape: Shape, protection: Protection, reason: &'static str) -> Rule {
    Rule { path, shape, protection, reason }
}

use Protection::{AgentHost, BuildTool, Editor, HookManager, Shell};
use Shape::{File, Tree};

/// Every rule, in the order `docs/SECURITY.md` lists them.
pub const RULES: &[Rule] = &[
    // Agent hosts: project settings that run hooks, helpers and MCP servers.
    rule(
        ".claude/settings.json",
        File,
        AgentHost,
        "Claude Code: hooks, statusLine, apiKeyHelper and other helpers run as commands, also in `claude -p`; VS Code's agent hooks read it too",
    ),
    rule(".claude/settings.local.json", File, AgentHost, "Claude Code: the same keys, local to the user"),
    rule(".claude/commands", Tree, AgentHost, "Claude Code: slash commands run shell lines (`!`) when invoked"),
    rule(".claude/agents", Tree, AgentHost, "Claude Code: subagents with their own hooks and MCP servers"),
    rule(
        ".claude/skills",
        Tree,
        AgentHost,
        "Claude Code (and Copilot CLI): skills bundle scripts the model is told to run",
    ),
    rule(".claude/hooks", Tree, AgentHost, "Claude Code: hook scripts named by settings"),
    rule(".claude/workflows", Tree, AgentHost, "Claude Code: workflow scripts"),
    rule(".claude/scheduled_tasks.json", File, AgentHost, "Claude Code: scheduled tasks"),
    rule(".mcp.json", File, AgentHost, "Claude Code and Copilot CLI: project MCP servers, started as commands"),
    rule(".agents", Tree, AgentHost, "Codex and Copilot CLI: skills with scripts"),
    rule(
        ".codex",
        Tree,
        AgentHost,
        "Codex: config.toml (MCP servers, notify, sandbox mode), hooks.json, rules that approve commands",
    ),
    rule(
        ".gemini",
        Tree,
        AgentHost,
        "Gemini CLI: settings.json (MCP servers, hooks, discovery commands), .env loaded into its process, commands with `!{…}`",
    ),
    rule(".qwen", Tree, AgentHost, "Qwen Code: settings.json (MCP servers, hooks), .env, commands"),
    rule(
        ".lsp.json",
        File,
        AgentHost,
        "Qwen Code: language servers, started as commands (it can waive its own trust check)",
    ),
    rule(".cursor", Tree, AgentHost, "Cursor: mcp.json (servers), hooks.json and hook scripts, CLI permissions"),
    rule("opencode.json", File, AgentHost, "opencode: MCP servers, plugins, formatter and LSP commands"),
    rule("opencode.jsonc", File, AgentHost, "opencode: MCP servers, plugins, formatter and LSP commands"),
    rule(".opencode", Tree, AgentHost, "opencode: plugins loaded at start (JavaScript in the host) and tools"),
    rule(".github/hooks", Tree, AgentHost, "GitHub Copilot CLI and VS Code's agent: hook commands"),
    rule(".github/copilot", Tree, AgentHost, "GitHub Copilot CLI: repository settings"),
    rule(".github/agents", Tree, AgentHost, "GitHub Copilot: custom agents (MCP servers)"),
    rule(".github/skills", Tree, AgentHost, "GitHub Copilot: skills with scripts"),
    rule(".github/mcp.json", File, AgentHost, "GitHub Copilot CLI: project MCP servers"),
    rule(".clinerules/hooks", Tree, AgentHost, "Cline: executable hooks"),
    rule(".cline/hooks", Tree, AgentHost, "Cline: executable hooks (its newer place)"),
    rule(".windsurf/hooks.json", File, AgentHost, "Windsurf: hook commands"),
    rule(".kiro", Tree, AgentHost, "Kiro: MCP servers, hooks, agents"),
    rule(".amazonq", Tree, AgentHost, "Amazon Q: MCP servers and agents with hooks"),
    rule(".roo/mcp.json", File, AgentHost, "Roo Code: MCP servers"),
    rule(".continue", Tree, AgentHost, "Continue: MCP servers"),
    rule(".kilocode", Tree, AgentHost, "Kilo Code: MCP servers and workflows"),
    rule(".factory", Tree, AgentHost, "Factory's droid: settings, hooks and MCP servers"),
    rule(".junie", Tree, AgentHost, "Junie: MCP servers (`mcp/mcp.json`)"),
    rule(".trae", Tree, AgentHost, "Trae: MCP servers"),
    rule(".augment", Tree, AgentHost, "Augment: settings and MCP servers"),
    rule(".openhands", Tree, AgentHost, "OpenHands: `setup.sh` and hooks it runs when a session starts"),
    rule("crush.json", File, AgentHost, "Crush: MCP servers and language servers it starts"),
    rule(".crush.json", File, AgentHost, "Crush: MCP servers and language servers it starts"),
    rule(".aider.conf.yml", File, AgentHost, "aider: `lint-cmd` and `test-cmd` it runs after edits"),
    // Editors and tools: what runs when the folder is opened or entered.
    rule(".vscode/settings.json", File, Editor, "VS Code: interpreter, formatter and tool paths its extensions run"),
    rule(
        ".vscode/tasks.json",
        File,
        Editor,
        "VS Code and its forks: tasks, some run when the folder opens (`runOn: folderOpen`)",
    ),
    rule(".vscode/launch.json", File, Editor, "VS Code: debug configurations (preLaunchTask, programs)"),
    rule(".vscode/mcp.json", File, Editor, "VS Code: MCP servers, started as commands"),
    rule(".zed", Tree, Editor, "Zed: language servers, MCP servers, formatters, tasks"),
    rule(".helix", Tree, Editor, "Helix: language servers and formatters it starts when a file opens"),
    rule(".theia", Tree, Editor, "Theia: settings, tasks and launch configurations"),
    rule(".lazy.lua", File, Editor, "LazyVim: Lua run on start in the directory"),
    rule(".idea", Tree, Editor, "JetBrains IDEs: run configurations, startup tasks, tool paths"),
    rule(".devcontainer", Tree, Editor, "Dev containers: lifecycle commands (initializeCommand runs on the host)"),
    rule(".devcontainer.json", File, Editor, "Dev containers: lifecycle commands"),
    rule(".envrc", File, Editor, "direnv: runs it on entering the directory"),
    rule(".envrc.local", File, Editor, "direnv: sourced by an allowed `.envrc`, without asking again"),
    rule(".hg/hgrc", File, Editor, "Mercurial: hooks and extensions run by any `hg` command"),
    rule(".hg/hgrc-not-shared", File, Editor, "Mercurial: hooks and extensions run by any `hg` command"),
    rule(".jj/repo/config.toml", File, Editor, "Jujutsu: aliases, pager, editor and fix tools it runs"),
    rule(".mise.toml", File, Editor, "mise: tasks, hooks and env it runs on entering"),
    rule("mise.toml", File, Editor, "mise: tasks, hooks and env it runs on entering"),
    rule(".mise.local.toml", File, Editor, "mise: local overrides"),
    rule("mise.local.toml", File, Editor, "mise: local overrides"),
    rule(".mise", Tree, Editor, "mise: config directory"),
    rule("mise/config.toml", File, Editor, "mise: config"),
    rule(".config/mise", Tree, Editor, "mise: config directory"),
    rule(".config/mise.toml", File, Editor, "mise: config"),
    rule(".exrc", File, Editor, "vim with `exrc` set: commands run on start"),
    rule(".lvimrc", File, Editor, "vim's localvimrc plugin: sourced as vim script"),
    rule(".ycm_extra_conf.py", File, Editor, "YouCompleteMe: Python it runs for the project"),
    rule(".dir-locals.el", File, Editor, "Emacs: directory-local variables, `eval` forms among them"),
    rule(".dir-locals-2.el", File, Editor, "Emacs: directory-local variables, `eval` forms among them"),
    rule(".autoenv.zsh", File, Shell, "zsh-autoenv: sourced on `cd` into the directory"),
    rule(".autoenv_leave.zsh", File, Shell, "zsh-autoenv: sourced on `cd` out of the directory"),
    rule(".nvim.lua", File, Editor, "Neovim with `exrc` set: Lua run on start"),
    rule(".nvimrc", File, Editor, "Neovim with `exrc` set: commands run on start"),
    rule(".pdbrc", File, Editor, "pdb: commands run when the debugger starts here"),
    rule(".irbrc", File, Editor, "irb and rails console: Ruby run at start"),
    rule("irb.rc", File, Editor, "irb: Ruby run at start (its other name for `.irbrc`)"),
    rule("_irbrc", File, Editor, "irb: Ruby run at start (its other name for `.irbrc`)"),
    rule("perldb.ini", File, Editor, "the Perl debugger: Perl run when `perl -d` starts in the directory"),
    rule(".pryrc", File, Editor, "pry: Ruby run at start in the directory"),
    rule(".Rprofile", File, Editor, "R and RStudio: R run at every start in the directory"),
    rule(".ripgreprc", File, Editor, "ripgrep with RIPGREP_CONFIG_PATH: `--pre` runs a program per file"),
    rule(".Renviron", File, Editor, "R: read at every start in the directory (`R_PROFILE_USER` names code it runs)"),
    rule(".ghci", File, Editor, "GHCi: run at start in the directory (`:!` runs shell commands)"),
    rule(".iex.exs", File, Editor, "IEx: Elixir evaluated at start in the directory"),
    rule(".ocamlinit", File, Editor, "the OCaml toplevel: run at start in the directory"),
    rule(".octaverc", File, Editor, "Octave: run at every start in the directory"),
    rule(".perldb", File, Editor, "the Perl debugger: Perl run when `perl -d` starts in the directory"),
    rule(".erlang", File, Editor, "the Erlang shell: expressions evaluated at every start in the directory"),
    rule(".gnuplot", File, Editor, "gnuplot: commands (`system`, `!`) run at start in the directory"),
    rule(".dbxinit", File, Editor, "dbx: commands run when the debugger starts in the directory"),
    rule(".dbxrc", File, Editor, "dbx: commands run when the debugger starts in the directory"),
    rule(".vimrc", File, Editor, "vim with `exrc` set: read from the directory at start"),
    rule(".gvimrc", File, Editor, "gvim with `exrc` set: read from the directory at start"),
    rule("_vimrc", File, Editor, "vim with `exrc` set: read from the directory at start (its other name)"),
    rule("_gvimrc", File, Editor, "gvim with `exrc` set: read from the directory at start (its other name)"),
    rule("_exrc", File, Editor, "vi and vim with `exrc` set: read from the directory at start (its other name)"),
    rule(".lldbinit", File, Editor, "lldb with local init files allowed: commands run at start"),
    rule(".gdbinit", File, Editor, "gdb with auto-load allowed: commands run at start"),
    rule(".tool-versions", File, Editor, "asdf and mise: `path:` versions run programs from any directory"),
    rule(".direnv", Tree, Editor, "direnv: the layout dir an allowed `.envrc` puts on PATH and sources"),
    rule(".claude/statusline.sh", File, AgentHost, "Claude Code: the status line command settings name"),
    rule(".roomodes", File, AgentHost, "Roo Code: custom modes"),
    rule(".idx/mcp.json", File, AgentHost, "Firebase Studio: the MCP servers its agent starts"),
    rule(".kilocodemodes", File, AgentHost, "Kilo Code: custom modes"),
    rule(".windsurf/workflows", Tree, AgentHost, "Windsurf: workflows its agent runs"),
    rule(".github/prompts", Tree, AgentHost, "GitHub Copilot: prompt files its agent runs"),
    rule(".opencode.json", File, AgentHost, "opencode: project config (MCP servers, commands)"),
    rule(".continuerc.json", File, AgentHost, "Continue: project config (MCP servers, commands)"),
    rule(".sl/config", File, Editor, "Sapling: repository config (hooks run shell commands)"),
    rule(".tflint.d", Tree, BuildTool, "TFLint: plugins it loads and runs"),
    rule(".golangci.yml", File, BuildTool, "golangci-lint: custom linters it loads as plugins"),
    rule(".golangci.yaml", File, BuildTool, "golangci-lint: custom linters it loads as plugins"),
    rule(".pdm-python", File, BuildTool, "PDM: the interpreter it runs"),
    rule("devbox.json", File, BuildTool, "Devbox: init hooks and scripts run in its shell"),
    rule("pixi.toml", File, BuildTool, "pixi: tasks and activation scripts"),
    rule(".jvmopts", File, BuildTool, "sbt: JVM options (agents, classpath) it starts with"),
    rule(".sbtopts", File, BuildTool, "sbt's launcher: options (`-J-javaagent:`) it starts the JVM with"),
    rule(".sbtrc", File, BuildTool, "sbt: commands run at start"),
    rule(".mill-jvm-opts", File, BuildTool, "Mill: JVM options (`-javaagent:`)"),
    rule(".bsp", Tree, BuildTool, "Build Server Protocol: the `argv` IDEs start when the workspace opens"),
    rule(".amp/settings.json", File, AgentHost, "Amp: workspace settings (MCP servers)"),
    rule(".pylintrc", File, Editor, "pylint: `init-hook` is Python it runs (editors run pylint on open)"),
    rule("pylintrc", File, Editor, "pylint: `init-hook` is Python it runs"),
    rule("mypy.ini", File, Editor, "mypy: `plugins` it imports"),
    rule(".mypy.ini", File, Editor, "mypy: `plugins` it imports"),
    rule(".flake8", File, Editor, "flake8: local plugins it imports"),
    rule("shell.nix", File, BuildTool, "nix-shell: `shellHook` runs on entering"),
    rule("default.nix", File, BuildTool, "nix-shell: `shellHook` runs on entering"),
    rule("flake.nix", File, BuildTool, "nix develop: `shellHook` runs on entering"),
    rule("devenv.nix", File, BuildTool, "devenv: `enterShell` runs on entering"),
    rule("devenv.yaml", File, BuildTool, "devenv: inputs and imports"),
    rule(".idx/dev.nix", File, BuildTool, "Project IDX: `onStart` commands"),
    rule(".gitpod.yml", File, BuildTool, "Gitpod: tasks run when the workspace starts"),
    rule(".replit", File, BuildTool, "Replit: the run command"),
    rule(".rtx.toml", File, Editor, "rtx (mise's old name): config"),
    rule(".actrc", File, BuildTool, "act: default flags (`-P …=-self-hosted` runs steps on the host)"),
    // Git hook managers: what `git commit` runs.
    rule(".husky", Tree, HookManager, "husky: the hook scripts `git commit` runs"),
    rule(".pre-commit-config.yaml", File, HookManager, "pre-commit: hook commands `git commit` runs"),
    rule("lefthook.yml", File, HookManager, "lefthook: hook commands"),
    rule("lefthook.yaml", File, HookManager, "lefthook: hook commands"),
    rule("lefthook.toml", File, HookManager, "lefthook: hook commands"),
    rule("lefthook.json", File, HookManager, "lefthook: hook commands"),
    rule(".lefthook.yml", File, HookManager, "lefthook: hook commands"),
    rule(".lefthook.yaml", File, HookManager, "lefthook: hook commands"),
    rule(".config/lefthook.yml", File, HookManager, "lefthook: hook commands"),
    rule(".config/lefthook.yaml", File, HookManager, "lefthook: hook commands"),
    rule("lefthook-local.yml", File, HookManager, "lefthook: local hook commands"),
    rule("lefthook-local.yaml", File, HookManager, "lefthook: local hook commands"),
    rule(".lefthook-local.yml", File, HookManager, "lefthook: local hook commands"),
    rule(".lefthook-local.yaml", File, HookManager, "lefthook: local hook commands"),
    rule(".lefthook", Tree, HookManager, "lefthook: hook scripts"),
    rule(".lefthook-local", Tree, HookManager, "lefthook: local hook scripts"),
    rule(".overcommit.yml", File, HookManager, "overcommit: hook commands"),
    rule(".git-hooks", Tree, HookManager, "overcommit: hook plugins"),
    rule(".simple-git-hooks.json", File, HookManager, "simple-git-hooks: hook commands"),
    rule(".simple-git-hooks.js", File, HookManager, "simple-git-hooks: hook commands"),
    rule(".simple-git-hooks.cjs", File, HookManager, "simple-git-hooks: hook commands"),
    rule(".simple-git-hooks.mjs", File, HookManager, "simple-git-hooks: hook commands"),
    rule("simple-git-hooks.json", File, HookManager, "simple-git-hooks: hook commands"),
    rule("simple-git-hooks.js", File, HookManager, "simple-git-hooks: hook commands"),
    rule("hk.pkl", File, HookManager, "hk: hook commands"),
    rule("captainhook.json", File, HookManager, "CaptainHook: hook commands"),
    // Build tools: programs a plain build, install or editor start runs, that the project's own
    // code does not show.
    rule(
        ".cargo/config.toml",
        File,
        BuildTool,
        "cargo: rustc-wrapper, runners and linkers it runs (rust-analyzer runs cargo when the folder opens)",
    ),
    rule(".cargo/config", File, BuildTool, "cargo: the same, older name"),
    rule(
        "rust-toolchain.toml",
        File,
        BuildTool,
        "rustup: `path` makes every cargo and rustc in the tree run programs from there",
    ),
    rule("rust-toolchain", File, BuildTool, "rustup: the same, older name"),
    rule(".npmrc", File, BuildTool, "npm: script-shell, node-options and git paths it runs"),
    rule(".yarnrc", File, BuildTool, "yarn 1: yarn-path, the program yarn runs instead of itself"),
    rule(".yarnrc.yml", File, BuildTool, "yarn: yarnPath and plugins it loads on every call"),
    rule(".yarn/releases", Tree, BuildTool, "yarn: the release yarnPath names, run on every call"),
    rule(".yarn/plugins", Tree, BuildTool, "yarn: plugins loaded on every call"),
    rule(".pnpmfile.cjs", File, BuildTool, "pnpm: hooks run on every install"),
    rule(".pnpmfile.mjs", File, BuildTool, "pnpm: hooks run on every install"),
    rule("bunfig.toml", File, BuildTool, "bun: preload scripts"),
    rule(".bunfig.toml", File, BuildTool, "bun: preload scripts"),
    rule(".mvn/jvm.config", File, BuildTool, "Maven: JVM options (agents) of every build"),
    rule(".mvn/maven.config", File, BuildTool, "Maven: options of every build"),
    rule(".mvn/extensions.xml", File, BuildTool, "Maven: extensions loaded into every build"),
    rule(
        ".mvn/wrapper/maven-wrapper.properties",
        File,
        BuildTool,
        "the Maven wrapper: the distribution it downloads and runs",
    ),
    rule(
        "gradle/wrapper/gradle-wrapper.properties",
        File,
        BuildTool,
        "the Gradle wrapper (and IDEs): the distribution it downloads and runs",
    ),
    rule(".bazelrc", File, BuildTool, "bazel: workspace status commands and run wrappers"),
    rule(".bazeliskrc", File, BuildTool, "bazelisk: where the bazel it runs is downloaded from"),
    // Shells: startup files, at any depth (a dotfiles repository, a home directory).
    rule(".bashrc", File, Shell, "bash runs it at start"),
    rule(".bash_profile", File, Shell, "bash runs it at login"),
    rule(".bash_login", File, Shell, "bash runs it at login"),
    rule(".bash_logout", File, Shell, "bash runs it at logout"),
    rule(".bash_aliases", File, Shell, "Debian's and Ubuntu's .bashrc source it"),
    rule(".bashrc.d", Tree, Shell, "Fedora's .bashrc sources it"),
    rule(".profile", File, Shell, "sh and bash run it at login"),
    rule(".zshrc", File, Shell, "zsh runs it at start"),
    rule(".zshenv", File, Shell, "zsh runs it at every start, scripts included"),
    rule(".zprofile", File, Shell, "zsh runs it at login"),
    rule(".zlogin", File, Shell, "zsh runs it at login"),
    rule(".zlogout", File, Shell, "zsh runs it at logout"),
    rule(".kshrc", File, Shell, "ksh runs it at start"),
    rule(".mkshrc", File, Shell, "mksh runs it at start"),
    rule(".cshrc", File, Shell, "csh runs it at start"),
    rule(".tcshrc", File, Shell, "tcsh runs it at start"),
    rule(".login", File, Shell, "csh and tcsh run it at login"),
    rule(".logout", File, Shell, "csh and tcsh run it at logout"),
    rule(".xonshrc", File, Shell, "xonsh runs it at start"),
    rule(".inputrc", File, Shell, "readline reads it (macros that type commands)"),
    rule(".config/fish", Tree, Shell, "fish runs config.fish, conf.d and autoloaded functions"),
    rule(".config/nushell", Tree, Shell, "nushell runs its config at start"),
    rule(".config/xonsh", Tree, Shell, "xonsh runs its config at start"),
    rule(".config/powershell", Tree, Shell, "PowerShell runs its profile at start"),
    rule(".config/zsh", Tree, Shell, "zsh with ZDOTDIR there"),
    rule(
        ".gitconfig",
        File,
        Protection::Git,
        "git: a user's config (hooks, aliases, programs), when this is a home directory",
    ),
    rule(".config/git", Tree, Protection::Git, "git: a user's config and attributes, when this is a home directory"),
];

/// Beneath a home directory a root holds, every entry whose name starts with `.` (configs of
/// shells, editors, tools and agent hosts; credentials' helpers; directories on `PATH`; and
/// the caches, which hold code that runs later: corepack's package managers, pre-commit's
/// hook environments, cargo's registry sources whose build scripts a build runs, Maven's and
/// Gradle's jars, pip's wheels, uv's and poetry's environments) is code-bearing, except
/// these, which hold nothing that runs.
pub const HOME_DATA: &[&str] = &[".local/share/Trash"];

/// The entries of a home directory that are code-bearing although their names do not start
/// with a dot: directories on a default `PATH`, Go's module cache (builds use it as it is),
/// and macOS's per-user launch agents (they run at login) and application settings (Claude
/// Desktop's MCP servers, editors' settings).
pub const HOME_BIN: &[&str] = &[
    "bin",
    "go/bin",
    "go/pkg",
    "Library/LaunchAgents",
    "Library/Application Support",
    "Library/Preferences",
    // Node resolves `require` up to `~/node_modules` from every script under home; local::lib's
    // default `PERL5LIB`.
    "node_modules",
    "perl5",
];
