//! The module list every Go binary carries (CONTRACT 29): the build info the linker writes
//! into `.go.buildinfo` since Go 1.18 (`runtime/debug.BuildInfo`, what `go version -m`
//! prints) — the toolchain version (matched as the `stdlib` module), the main module and
//! every dependency with replacements applied.

use super::Dep;
use std::io::Read;
use std::path::Path;

const MAGIC: &[u8; 14] = b"\xff Go buildinf:";
/// Most bytes read from one executable while looking for its build info.
const MAX_READ: u64 = 512 * 1024 * 1024;

/// What a Go binary says about how it was built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildInfo {
    /// `go1.21.5`.
    pub go_version: String,
    /// The main package's import path.
    pub path: String,
    /// The modules: the main one (when it has a version) and every dependency, as
    /// `(module path, version)` with replacements applied.
    pub modules: Vec<(String, String)>,
}

impl BuildInfo {
    /// The packages to match: the toolchain as `stdlib` and each module (Go's versions
    /// without their `v`).
    pub fn deps(&self) -> Vec<Dep> {
        let mut out = Vec::new();
        if let Some(v) = self.go_version.strip_prefix("go") {
            // `go1.21.5` (a development toolchain such as `devel +abc` has no version).
            let v = v.split([' ', '-']).next().unwrap_or(v);
            if !v.is_empty() && v.chars().next().is_some_and(|c| c.is_ascii_digit()) {
                out.push(Dep::new("Go", "stdlib", v));
            }
        }
        for (m, v) in &self.modules {
            out.push(Dep::new("Go", m, v.trim_start_matches('v')));
        }
        out
    }
}

/// Reads the build info of an executable: `Ok(None)` when it is not a Go binary. Only the
/// `.go.buildinfo` section is read when the ELF file names its sections; otherwise the file
/// is searched (up to 512 MiB).
pub fn read_file(path: &Path) -> Result<Option<BuildInfo>, String> {
    let mut f = std::fs::File::open(path).map_err(|e| format!("unreadable: {e}"))?;
    let mut head = [0u8; 64];
    if f.read_exact(&mut head).is_err() || !head.starts_with(b"\x7fELF") {
        return Ok(None);
    }
    match elf_section(&mut f, &head, b".go.buildinfo") {
        Section::Found(section) => return read(&section),
        // Named sections without that one: not a Go binary (no search of the whole file).
        Section::Absent => return Ok(None),
        Section::NoTable => {}
    }
    let mut bytes = head.to_vec();
    f.take(MAX_READ)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("unreadable: {e}"))?;
    read(&bytes)
}

/// What an ELF file's section table says of a section.
enum Section {
    Found(Vec<u8>),
    Absent,
    NoTable,
}

/// The bytes of a named section of a 64-bit little-endian ELF file.
fn elf_section(f: &mut std::fs::File, head: &[u8; 64], name: &[u8]) -> Section {
    match section_bytes(f, head, name) {
        Some(Some(b)) => Section::Found(b),
        Some(None) => Section::Absent,
        None => Section::NoTable,
    }
}

/// `None`: no readable section table; `Some(None)`: no such section.
fn section_bytes(f: &mut std::fs::File, head: &[u8; 64], name: &[u8]) -> Option<Option<Vec<u8>>> {
    use std::io::{Seek, SeekFrom};
    if head[4] != 2 || head[5] != 1 {
        return None;
    }
    let u16_at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]));
    let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap_or([0; 4]));
    let (shoff, shentsize, shnum, shstrndx) = (
        u64_at(head, 0x28),
        usize::from(u16_at(head, 0x3a)),
        usize::from(u16_at(head, 0x3c)),
        usize::from(u16_at(head, 0x3e)),
    );
    if shoff == 0 || shentsize < 64 || shnum == 0 || shnum > 4096 || shstrndx >= shnum {
        return None;
    }
    let mut table = vec![0u8; shentsize * shnum];
    f.seek(SeekFrom::Start(shoff)).ok()?;
    f.read_exact(&mut table).ok()?;
    let mut read_at = |off: u64, size: u64| -> Option<Vec<u8>> {
        if size > 64 * 1024 * 1024 {
            return None;
        }
        let mut buf = vec![0u8; usize::try_from(size).ok()?];
        f.seek(SeekFrom::Start(off)).ok()?;
        f.read_exact(&mut buf).ok()?;
        Some(buf)
    };
    let sh = |i: usize| &table[i * shentsize..(i + 1) * shentsize];
    let strtab = read_at(u64_at(sh(shstrndx), 0x18), u64_at(sh(shstrndx), 0x20))?;
    for i in 0..shnum {
        let h = sh(i);
        let at = usize::try_from(u32_at(h, 0)).ok()?;
        let end = strtab.get(at..)?.iter().position(|b| *b == 0)? + at;
        if &strtab[at..end] == name {
            return Some(read_at(u64_at(h, 0x18), u64_at(h, 0x20)));
        }
    }
    Some(None)
}

fn uvarint(b: &[u8]) -> Option<(usize, usize)> {
    let mut x: u64 = 0;
    for (i, &byte) in b.iter().enumerate().take(10) {
        x |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return Some((usize::try_from(x).ok()?, i + 1));
        }
    }
    None
}

/// The build info in an executable's bytes: `Ok(None)` without the build-info header.
pub fn read(bytes: &[u8]) -> Result<Option<BuildInfo>, String> {
    // The header is 16-byte aligned inside its section.
    let Some(at) = bytes
        .chunks(16)
        .position(|c| c.len() >= 14 && &c[..14] == MAGIC)
        .map(|i| i * 16)
    else {
        return Ok(None);
    };
    let head = bytes
        .get(at..at + 32)
        .ok_or("the build-info header is cut short")?;
    if head[15] & 0x2 == 0 {
        return Err("built by Go before 1.18: its build info is not read".into());
    }
    let mut rest = &bytes[at + 32..];
    let mut string = || -> Result<Vec<u8>, String> {
        let (len, n) = uvarint(rest).ok_or("a build-info length cannot be read")?;
        let s = rest
            .get(n..n + len)
            .ok_or("a build-info string runs past the end of the file")?;
        rest = &rest[n + len..];
        Ok(s.to_vec())
    };
    let utf8 = |b: &[u8]| {
        String::from_utf8(b.to_vec()).map_err(|_| "a build-info string is not UTF-8".to_string())
    };
    let go_version = utf8(&string()?)?;
    let raw = string()?;
    // The module list sits between two 16-byte binary sentinels.
    let modinfo = if raw.len() >= 33 && raw[raw.len() - 17] == b'\n' {
        utf8(&raw[16..raw.len() - 16])?
    } else {
        utf8(&raw)?
    };
    let mut info = BuildInfo {
        go_version,
        path: String::new(),
        modules: Vec::new(),
    };
    let mut last_dep: Option<usize> = None;
    for line in modinfo.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        match f.first().copied() {
            Some("path") if f.len() >= 2 => info.path = f[1].to_owned(),
            Some("mod") | Some("dep") if f.len() >= 3 => {
                last_dep = None;
                if f[2] != "(devel)" && !f[2].is_empty() {
                    info.modules.push((f[1].to_owned(), f[2].to_owned()));
                    last_dep = Some(info.modules.len() - 1);
                }
            }
            // A replacement: a module with a version takes the place of the required one; a
            // local directory keeps the required version (what `go.sum` names).
            Some("=>") if f.len() >= 3 => {
                if let Some(i) = last_dep
                    && f[2] != "(devel)"
                    && !f[2].is_empty()
                {
                    info.modules[i] = (f[1].to_owned(), f[2].to_owned());
                }
            }
            _ => {}
        }
    }
    Ok(Some(info))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// A Go binary with a dependency (replaced by a local directory), built here by the real
    /// toolchain, read and compared with `go version -m` (the oracle).
    #[test]
    fn a_go_binary_says_what_go_version_m_says() {
        if Command::new("go").arg("version").output().is_err() {
            assert!(std::env::var_os("CI").is_none(), "go is required in CI");
            return;
        }
        let dir = std::env::temp_dir().join(format!("gobin-{}", uuid::Uuid::new_v4().simple()));
        let files = [
            ("dep/go.mod", "module example.com/dep\n\ngo 1.18\n"),
            (
                "dep/dep.go",
                "package dep\n\nfunc Hello() string { return \"hi\" }\n",
            ),
            (
                "app/go.mod",
                "module example.com/app\n\ngo 1.18\n\nrequire example.com/dep v1.2.3\n\nreplace example.com/dep v1.2.3 => ../dep\n",
            ),
            (
                "app/main.go",
                "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\t\"time\"\n\t\"example.com/dep\"\n)\n\n\
                 func main() {\n\tfmt.Println(dep.Hello())\n\tif len(os.Args) > 1 {\n\t\ttime.Sleep(60 * time.Second)\n\t}\n}\n",
            ),
        ];
        for (rel, text) in files {
            let p = dir.join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("dir");
            std::fs::write(p, text).expect("write");
        }
        let built = Command::new("go")
            .args(["build", "-o", "app", "."])
            .current_dir(dir.join("app"))
            .env("GOFLAGS", "-mod=mod")
            .env("GOPROXY", "off")
            .env("GOCACHE", dir.join("cache"))
            .env("GOPATH", dir.join("gopath"))
            .output()
            .expect("go build");
        assert!(
            built.status.success(),
            "{}",
            String::from_utf8_lossy(&built.stderr)
        );
        let bin = dir.join("app/app");
        let info = read_file(&bin).expect("read").expect("a Go binary");
        let oracle = Command::new("go")
            .args(["version", "-m"])
            .arg(&bin)
            .output()
            .expect("go version -m");
        let said = String::from_utf8_lossy(&oracle.stdout).into_owned();
        assert!(
            said.starts_with(&format!("{}: {}\n", bin.display(), info.go_version)),
            "{said}"
        );
        assert!(said.contains(&format!("\tpath\t{}\n", info.path)), "{said}");
        assert_eq!(info.path, "example.com/app");
        // `dep example.com/dep v1.2.3` replaced by a directory: the required version stays.
        assert!(said.contains("\tdep\texample.com/dep\tv1.2.3"), "{said}");
        assert_eq!(
            info.modules,
            [("example.com/dep".to_owned(), "v1.2.3".to_owned())]
        );
        let deps: Vec<String> = info
            .deps()
            .iter()
            .map(|d| format!("{}@{}", d.name, d.version))
            .collect();
        let go = info.go_version.trim_start_matches("go").to_owned();
        assert_eq!(
            deps,
            [format!("stdlib@{go}"), "example.com/dep@1.2.3".to_owned()]
        );
        // As the inventory reports it: the binary is the source of each module.
        let listed = crate::collect::deps::discover::go_binaries(&[dir.join("app")], &[]);
        let names: Vec<(&str, &str, &str)> = listed
            .iter()
            .map(|e| {
                (
                    e["name"].as_str().unwrap_or_default(),
                    e["source_kind"].as_str().unwrap_or_default(),
                    e["format"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("stdlib", "binary", "go-binary"),
                ("example.com/dep", "binary", "go-binary")
            ]
        );
        assert!(
            listed
                .iter()
                .all(|e| e["source"] == bin.display().to_string())
        );
        // Running from a folder no `--binary-path` names: found through the process's
        // executable (process discovery), named by where it runs from.
        let elsewhere = dir.join("run/svc");
        std::fs::create_dir_all(elsewhere.parent().expect("parent")).expect("dir");
        std::fs::copy(&bin, &elsewhere).expect("copy");
        let mut child = Command::new(&elsewhere)
            .arg("wait")
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("run the binary");
        let discovery = crate::collect::deps::discover::Discovery {
            processes: true,
            ..crate::collect::deps::discover::Discovery::only(&[], &[dir.join("cache")])
        };
        let found = crate::collect::deps::discover::dependencies(&discovery);
        let _ = child.kill();
        let _ = child.wait();
        let svc: Vec<&serde_json::Value> = found
            .iter()
            .filter(|e| e["source"] == elsewhere.display().to_string())
            .collect();
        assert_eq!(svc.len(), 2, "{found:?}");
        assert_eq!(svc[1]["name"], "example.com/dep");
        assert_eq!(
            svc[1]["project_path"],
            dir.join("run").display().to_string()
        );
        // Not a Go binary: nothing; a cut file: an error, never a panic.
        assert_eq!(read_file(Path::new("/bin/sh")), Ok(None));
        let bytes = std::fs::read(&bin).expect("bin");
        let at = bytes
            .chunks(16)
            .position(|c| c.len() >= 14 && &c[..14] == MAGIC)
            .expect("magic")
            * 16;
        // The section read alone gives the same answer as the whole file.
        assert_eq!(read(&bytes).expect("whole"), Some(info.clone()));
        for cut in [at + 20, at + 33, at + 40] {
            assert!(read(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
