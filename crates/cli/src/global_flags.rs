//! The operator CLI's global flags written before the verb (CONTRACT 28, 30).

/// The command line with the global flags (`--context`, `-o`/`--output`) written before the
/// verb moved after it, where every verb takes them: `trusthub --context prod agents ls` is
/// `trusthub agents --context prod ls` (CONTRACT 28, 30).
pub fn globals_after_the_verb(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut head: Vec<std::ffi::OsString> = args.iter().take(1).cloned().collect();
    let mut moved: Vec<std::ffi::OsString> = Vec::new();
    let mut i = 1;
    while i < args.len() {
        let a = args[i].to_string_lossy();
        let takes_value = a == "--context" || a == "-o" || a == "--output";
        let inline = a.starts_with("--context=")
            || a.starts_with("--output=")
            || (a.starts_with("-o") && a.len() > 2);
        if takes_value && i + 1 < args.len() {
            moved.extend([args[i].clone(), args[i + 1].clone()]);
            i += 2;
        } else if inline {
            moved.push(args[i].clone());
            i += 1;
        } else {
            break;
        }
    }
    if moved.is_empty() || i >= args.len() {
        return args;
    }
    // The verb, then the moved flags, then the rest.
    head.push(args[i].clone());
    head.extend(moved);
    head.extend(args[i + 1..].iter().cloned());
    head
}

#[cfg(test)]
mod tests {
    use super::globals_after_the_verb;

    fn moved(args: &[&str]) -> Vec<String> {
        globals_after_the_verb(args.iter().map(Into::into).collect())
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn global_flags_before_the_verb_move_after_it() {
        assert_eq!(
            moved(&["trusthub", "--context", "prod", "agents", "ls"]),
            ["trusthub", "agents", "--context", "prod", "ls"]
        );
        assert_eq!(
            moved(&[
                "trusthub",
                "--context=prod",
                "-o",
                "json",
                "apps",
                "get",
                "x"
            ]),
            [
                "trusthub",
                "apps",
                "--context=prod",
                "-o",
                "json",
                "get",
                "x"
            ]
        );
        assert_eq!(
            moved(&["trusthub", "agents", "ls", "--context", "prod"]),
            ["trusthub", "agents", "ls", "--context", "prod"]
        );
        assert_eq!(moved(&["trusthub", "--version"]), ["trusthub", "--version"]);
        assert_eq!(moved(&["trusthub", "--context"]), ["trusthub", "--context"]);
    }
}
