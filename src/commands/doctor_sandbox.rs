//! The sandbox part of `doctor`: the contract a command started now would get (writable,
//! read-only, hidden paths, temp dirs, limits), and the layers a probe run under it finds.

#[cfg(target_os = "linux")]
use std::path::{Path, PathBuf};

use toolbelt_mcp_core::config::Config;
use toolbelt_mcp_sandbox::contract::{Bind, Contract};
#[cfg(target_os = "linux")]
use toolbelt_mcp_sandbox::exec::Confinement;
#[cfg(target_os = "linux")]
use toolbelt_mcp_sandbox::linux::probe::{Layers, PROBE_SUBCOMMAND, ProxyProbe};
use toolbelt_mcp_sandbox::mode::Network;
use toolbelt_mcp_terminal::Terminals;

/// The report's sandbox lines.
pub(super) fn report(config: &Config) -> String {
    let mut out = format!("sandbox:       {}", config.sandbox.as_str());
    let terminals = Terminals::new(config);
    let confinement = terminals.confinement(config, &config.roots);
    let confinement = match confinement {
        Ok(None) => {
            out.push_str(" (no sandbox: commands run with the server's own rights)\n");
            return out;
        }
        Ok(Some(confinement)) => confinement,
        Err(err) => {
            out.push_str(&format!(" (commands are refused: {err})\n"));
            return out;
        }
    };
    #[cfg(target_os = "linux")]
    let probed = probe(config, &terminals, &confinement, config.roots.first().map_or(Path::new("/"), PathBuf::as_path));
    #[cfg(target_os = "linux")]
    match &probed {
        Ok(layers) => {
            out.push_str(&format!(", checked by a probe run under it:\n{}", describe_layers(layers, config.network)))
        }
        Err(err) => out.push_str(&format!(" (commands are refused: {err})\n")),
    }
    #[cfg(not(target_os = "linux"))]
    out.push_str(&format!(
        ", enforced by {} (reads, writes, network; no resource limits on this OS):\n",
        toolbelt_mcp_sandbox::backend::NAME
    ));
    out.push_str(&describe_contract(confinement.contract()));
    out.push_str(&describe_network(config));
    #[cfg(target_os = "linux")]
    if let Ok(layers) = &probed {
        out.push_str(&describe_proxy(layers));
    }
    terminals.remove_scratch();
    out
}

/// The destinations the probe tries through the proxy: one the rules allow (the first listed
/// name, else the first package registry) and the cloud metadata address, which they refuse
/// unless it is listed as exactly that.
#[cfg(target_os = "linux")]
fn probe_destinations(config: &Config) -> Vec<String> {
    let named = |entry: &str| toolbelt_mcp_sandbox::proxy::Allowed::parse(entry).ok()?.destination(443);
    let allowed = config
        .network_allow
        .iter()
        .map(String::as_str)
        .chain(toolbelt_mcp_sandbox::proxy::REGISTRIES.iter().copied())
        .find_map(named);
    allowed.into_iter().chain(["169.254.169.254:80".to_string()]).collect()
}

/// The proxy's line: what the probe reached through it, and what it was refused.
#[cfg(target_os = "linux")]
fn describe_proxy(layers: &Layers) -> String {
    if layers.proxy.is_empty() {
        return String::new();
    }
    let tried: Vec<String> = layers
        .proxy
        .iter()
        .map(|p| {
            if p.reached {
                format!("`{}` reached ({})", p.destination, p.detail)
            } else {
                format!("`{}` not reached: {}", p.destination, p.detail)
            }
        })
        .collect();
    format!("  proxy:       tried from inside the sandbox: {}\n", tried.join("; "))
}

/// Runs the probe as a sandboxed command; with a network through the proxy, a proxy of its
/// own serves it (on a runtime made for the probe) and the probe tries destinations through it.
#[cfg(target_os = "linux")]
fn probe(config: &Config, terminals: &Terminals, confinement: &Confinement, cwd: &Path) -> Result<Layers, String> {
    let through_proxy = matches!(config.network, Network::Allow | Network::Allowlist);
    // The proxy serves connections on the runtime current when it starts.
    let runtime = through_proxy
        .then(|| tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build())
        .transpose()
        .map_err(|e| format!("cannot start a runtime for the probe: {e}"))?;
    let _entered = runtime.as_ref().map(tokio::runtime::Runtime::enter);
    // A proxy that cannot start (no Unix sockets inside another sandbox) leaves the layers to
    // probe; its line says why.
    let (link, proxy_error) = match through_proxy.then(|| terminals.proxy_link(config, None)) {
        Some(Ok(link)) => (Some(link), None),
        Some(Err(err)) => (None, Some(err.to_string())),
        None => (None, None),
    };
    let mut args: Vec<std::ffi::OsString> = vec![PROBE_SUBCOMMAND.into()];
    if link.is_some() {
        for destination in probe_destinations(config) {
            args.extend([toolbelt_mcp_sandbox::linux::probe::PROXY_ARG.into(), destination.into()]);
        }
    }
    let per_command = toolbelt_mcp_sandbox::contract::PerCommand {
        proxy: link.as_ref().map(|link| link.contract()),
        ..Default::default()
    };
    // Init is this binary too: its `/proc/self/exe` reaches it even where its path does not
    // (a binary under `/tmp` is behind the command's private `/tmp`).
    let wrapped = confinement.wrap(std::ffi::OsStr::new("/proc/self/exe"), &args, cwd, per_command);
    let out = std::process::Command::new(wrapped.program)
        .args(wrapped.args)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot start the probe: {e}"))?;
    drop(link);
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    let mut layers: Layers =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("the probe's report does not parse: {e}"))?;
    if let Some(why) = proxy_error {
        layers.proxy = probe_destinations(config)
            .into_iter()
            .map(|destination| ProxyProbe { destination, reached: false, detail: why.clone() })
            .collect();
    }
    Ok(layers)
}

/// The network line: the mode and what it lets commands reach.
fn describe_network(config: &Config) -> String {
    let listed = if config.network_allow.is_empty() { "none".to_string() } else { config.network_allow.join(", ") };
    let what = match config.network {
        Network::Allow => format!("other hosts through the server's proxy: every public address, and listed: {listed}"),
        Network::Allowlist => {
            let defaults = if config.network_allow_defaults {
                format!(
                    "; and {} package registries and forges (`network_allow_defaults`)",
                    toolbelt_mcp_sandbox::mode::REGISTRIES.len()
                )
            } else {
                String::new()
            };
            format!(
                "other hosts through the server's proxy, those listed: {listed}{defaults}; the others asked of the user, refused when nobody can be"
            )
        }
        Network::Deny => "loopback only".to_string(),
        Network::Host => "the machine's network, its loopback services included".to_string(),
    };
    format!("  network:     {} ({what})\n", config.network.as_str())
}

/// One line per layer, as found.
#[cfg(target_os = "linux")]
fn describe_layers(layers: &Layers, network: Network) -> String {
    let yes_no = |held: bool, what: &str| if held { what.to_string() } else { format!("NOT {what}") };
    let mut namespaces = vec!["mount".to_string()];
    namespaces.push(if layers.pid == 2 {
        "pid (the command is PID 2 under the sandbox's init)".into()
    } else {
        format!("NOT pid (the command is PID {})", layers.pid)
    });
    namespaces.push(yes_no(layers.own_proc, "an own /proc (the server and other commands are not in it)"));
    match network {
        Network::Deny => namespaces.push(yes_no(layers.interfaces == ["lo"], "network (loopback only)")),
        Network::Allow | Network::Allowlist => namespaces.push(yes_no(
            layers.interfaces == ["lo"],
            "network (loopback only; other hosts through the server's proxy)",
        )),
        Network::Host => namespaces.push(format!("the machine's network ({} interfaces)", layers.interfaces.len())),
    }
    let caps_none = layers.capabilities.trim_start_matches('0').is_empty();
    let privileges = [
        yes_no(caps_none, "no capabilities"),
        yes_no(layers.no_new_privs, "no_new_privs"),
        yes_no(layers.seccomp, "seccomp filter (socket families, io_uring)"),
        yes_no(layers.writes_confined, "Landlock (writes only where listed, no device nodes)"),
    ];
    let limit =
        |value: Option<u64>, unit: &str| value.map_or_else(|| "unlimited".to_string(), |v| format!("{v}{unit}"));
    let [processes, memory, file, core] = layers.limits;
    format!(
        "  layers:      {}\n               {}\n  limits:      {} processes, {} address space per process, {} per file, core files {}\n",
        namespaces.join(", "),
        privileges.join(", "),
        limit(processes, ""),
        memory.map_or_else(|| "unlimited".to_string(), gib),
        file.map_or_else(|| "unlimited".to_string(), gib),
        if core == Some(0) { "off" } else { "on" },
    )
}

/// Bytes as GiB, to a tenth.
#[cfg(target_os = "linux")]
fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

/// The paths of the contract.
fn describe_contract(contract: &Contract) -> String {
    let mut out = String::from("  writable:\n");
    for dir in &contract.writable {
        out.push_str(&format!("    {}\n", dir.display()));
    }
    let (temp, read_only) = if cfg!(target_os = "linux") {
        ("/tmp, /var/tmp, /dev/shm: the session's own", "bound read-only in the command's mount namespace")
    } else {
        ("`TMPDIR`: the session's own", "denied by the Seatbelt profile, as are the protected names at any depth")
    };
    out.push_str(&format!(
        "    {temp} (under {}), removed with it\n    and /dev/null-class devices and PTYs\n",
        contract.temp.display()
    ));
    out.push_str(&format!("  read-only inside them ({read_only}):\n"));
    for bind in &contract.binds {
        if let Bind::ReadOnly(path) = bind {
            out.push_str(&format!("    {}\n", path.display()));
        }
    }
    out.push_str("  hidden from commands (deny_read):\n");
    for path in &contract.hidden {
        out.push_str(&format!("    {}\n", path.display()));
    }
    if contract.hidden.is_empty() {
        out.push_str("    (none)\n");
    }
    out
}
