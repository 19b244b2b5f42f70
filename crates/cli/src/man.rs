//! `trusthub man`: manual pages from the clap definitions.

/// `trusthub man --out <dir>`: one page for the binary and one per subcommand (nested ones
/// as `trusthub-agents-ls.1`), all from the clap definitions.
pub fn pages(mut root: clap::Command, out: &std::path::Path) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    fn write(cmd: &clap::Command, name: &str, out: &std::path::Path) -> Result<usize, String> {
        let page = clap_mangen::Man::new(cmd.clone()).title(name.to_owned());
        let mut bytes = Vec::new();
        page.render(&mut bytes).map_err(|e| e.to_string())?;
        let path = out.join(format!("{name}.1"));
        std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut n = 1;
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            n += write(sub, &format!("{name}-{}", sub.get_name()), out)?;
        }
        Ok(n)
    }
    root.build();
    let n = write(&root, "trusthub", out)?;
    eprintln!("wrote {n} man pages to {}", out.display());
    Ok(())
}
