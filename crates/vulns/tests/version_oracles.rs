//! Version order checked against the tools that define it (issue 20): for every scheme, a set
//! of versions — the nasty cases of each ecosystem plus versions generated from its grammar —
//! is compared pairwise by `trusthub_vulns::rules::version` and by the native tool, and every pair must
//! agree (including which strings are invalid). The tools: `dpkg --compare-versions`, Python
//! `packaging` and `rpm` (Debian's python3-packaging, python3-rpm), node-semver (Debian's
//! node-semver), Ruby's `Gem::Version`, Go's `golang.org/x/mod/semver` (Debian's
//! golang-golang-x-mod-dev). `.ci/run` installs them; a missing one fails the test.
//! Order laws (antisymmetry, transitivity) are checked on the same sets.

use std::cmp::Ordering;
use std::io::Write;
use std::process::{Command, Stdio};
use trusthub_vulns::rules::version::Scheme;

use trusthub_core::rng::Xorshift as Rng;

/// Runs `program args` with one `a\tb` line per pair on stdin; one answer line per pair.
fn oracle(program: &str, args: &[&str], pairs: &[(String, String)]) -> Vec<String> {
    let mut child = Command::new(program)
        .args(args)
        .env("GO111MODULE", "off")
        .env("GOPATH", "/usr/share/gocode")
        .env("GOFLAGS", "")
        // Debian's node-semver lives there (a Node.js from elsewhere does not look there).
        .env("NODE_PATH", "/usr/share/nodejs")
        .env(
            "GOCACHE",
            std::env::temp_dir().join("trusthub-go-oracle-cache"),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program} is needed as the oracle (.ci/run installs it): {e}"));
    let mut input = String::new();
    for (a, b) in pairs {
        input.push_str(&format!("{a}\t{b}\n"));
    }
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("oracle runs");
    assert!(
        out.status.success(),
        "{program} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    writer.join().expect("writer").expect("written");
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        lines.len(),
        pairs.len(),
        "one answer per pair from {program}"
    );
    lines
}

fn ours(scheme: Scheme, a: &str, b: &str) -> String {
    match scheme.compare(a, b) {
        Ok(Ordering::Less) => "-1".into(),
        Ok(Ordering::Equal) => "0".into(),
        Ok(Ordering::Greater) => "1".into(),
        Err(_) => "invalid".into(),
    }
}

/// Every pair (both orders), checked against the oracle; then the order laws.
fn check(scheme: Scheme, versions: &[String], program: &str, args: &[&str]) {
    let mut pairs = Vec::new();
    for (i, a) in versions.iter().enumerate() {
        for b in &versions[i..] {
            pairs.push((a.clone(), b.clone()));
            if a != b {
                pairs.push((b.clone(), a.clone()));
            }
        }
    }
    let answers = oracle(program, args, &pairs);
    let mut wrong = Vec::new();
    for ((a, b), want) in pairs.iter().zip(&answers) {
        let got = ours(scheme, a, b);
        // Oracles print -1/0/1 or any negative/positive number.
        let want = match want.trim().parse::<i64>() {
            Ok(n) => n.signum().to_string(),
            Err(_) => want.trim().to_owned(),
        };
        if got != want {
            wrong.push(format!("{a:?} vs {b:?}: ours {got}, {program} {want}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} pairs disagree with {program}:\n{}",
        wrong.len(),
        pairs.len(),
        wrong
            .iter()
            .take(25)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Order laws over the valid ones: a total order (sorting with it is consistent).
    let mut valid: Vec<&String> = versions
        .iter()
        .filter(|v| scheme.validate(v).is_ok())
        .collect();
    valid.sort_by(|a, b| scheme.compare(a, b).expect("valid"));
    for i in 0..valid.len() {
        for j in i..valid.len() {
            let o = scheme.compare(valid[i], valid[j]).expect("valid");
            assert_ne!(
                o,
                Ordering::Greater,
                "{} > {} after sorting",
                valid[i],
                valid[j]
            );
            assert_eq!(
                scheme.compare(valid[j], valid[i]).expect("valid"),
                o.reverse(),
                "antisymmetry of {} and {}",
                valid[i],
                valid[j]
            );
        }
    }
    assert!(pairs.len() >= 500, "{} pairs", pairs.len());
}

fn strings(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn dpkg_agrees_with_dpkg_compare_versions() {
    let mut v = strings(&[
        "1.0",
        "1.0-1",
        "1.0-0",
        "1.00",
        "1.0~rc1",
        "1.0~rc1-1",
        "1.0~~",
        "1.0~",
        "1.0+b1",
        "1.0a",
        "1.0+",
        "1.0.1",
        "1:0.1",
        "1:1.0",
        "2:0",
        "0:1.0",
        "1.0-1+deb12u1",
        "1.0-1~bpo12+1",
        "1.0-1ubuntu0.1",
        "1.0-1ubuntu0.22.04.1",
        "2.36.1-8+deb12u1",
        "2.36.1-8",
        "7.88.1-10+deb12u12",
        "7.88.1-10+deb12u5",
        "1.2.3-1.1",
        "1.2.3-10",
        "1.2.3-9",
        "1.2.3+dfsg-1",
        "1.2.3+dfsg1-1",
        "1.2.3.dfsg-1",
        "3.0.11-1~deb12u2",
        "3.0.13-1~deb12u1",
        "10",
        "9",
        "010",
        "1.0-a",
        "1.0-A",
        "1:2.3-4-5",
        "0.0",
        "0",
        "1.0.0~alpha+really0.9",
        "20230311",
        "2:1.0~beta",
        "1.0+git20230101.abc1234-1",
    ]);
    let mut r = Rng(0x5eed_d9c6);
    for _ in 0..30 {
        let epoch = if r.next_u64().is_multiple_of(4) {
            format!("{}:", r.below(3))
        } else {
            String::new()
        };
        let up = format!(
            "{}.{}{}",
            r.below(4),
            r.below(13),
            r.pick(&["", "~rc1", "+dfsg", "a", ".1", "~beta2", "+git1"])
        );
        let rev = r.pick(&["", "-1", "-2", "-1+deb12u1", "-1~bpo1", "-0ubuntu1", "-10"]);
        v.push(format!("{epoch}{up}{rev}"));
    }
    check(
        Scheme::Dpkg,
        &v,
        "bash",
        &[
            "-c",
            r#"while IFS=$'\t' read -r a b; do
                 if dpkg --compare-versions "$a" lt "$b" 2>/dev/null; then echo -1
                 elif dpkg --compare-versions "$a" eq "$b" 2>/dev/null; then echo 0
                 else echo 1; fi
               done"#,
        ],
    );
}

#[test]
fn pep_440_agrees_with_python_packaging() {
    let mut v = strings(&[
        "1.0",
        "1.0.0",
        "1.0.dev0",
        "1.0.dev1",
        "1.0a1",
        "1.0a1.dev1",
        "1.0alpha1",
        "1.0b1",
        "1.0beta2",
        "1.0rc1",
        "1.0c1",
        "1.0pre1",
        "1.0preview2",
        "1.0.post1",
        "1.0-1",
        "1.0post",
        "1.0.post1.dev1",
        "1.0-r1",
        "1.0rev2",
        "1.0+local",
        "1.0+local.1",
        "1.0+local.a",
        "1.0+1",
        "1.0+a.1",
        "1.0+abc.5",
        "1!1.0",
        "2!0.1",
        "0!1.0",
        "v1.0",
        "V2.0",
        " 1.0 ",
        "1.0a",
        "1.0.a1",
        "1.0-a1",
        "1.0_a1",
        "1.0.0.0.1",
        "0.9",
        "1.0.dev456",
        "1.0a12.dev456",
        "1.0b2.post345.dev456",
        "1.1.dev1",
        "2024.1",
        "2024.01.02",
        "1.0RC1",
        "1.0.POST2",
        "1.0+UBUNTU.1",
        "1.0.",
        "1.0+",
        "a1",
        "1.0 beta",
        "1.0-",
        "1..0",
        "",
    ]);
    let mut r = Rng(0x440);
    for _ in 0..30 {
        v.push(format!(
            "{}{}.{}{}{}{}",
            r.pick(&["", "", "", "1!"]),
            r.below(4),
            r.below(11),
            r.pick(&["", "a1", "b2", "rc1", ".rc2", "-alpha3", ""]),
            r.pick(&["", ".post1", "-2", "", ".post0"]),
            r.pick(&["", ".dev0", ".dev3", "", "+local.7"]),
        ));
    }
    check(
        Scheme::Pep440,
        &v,
        "/usr/bin/python3",
        &[
            "-c",
            "import sys\nfrom packaging.version import Version, InvalidVersion\n\
             for line in sys.stdin:\n    a, b = line.rstrip('\\n').split('\\t')\n    \
             try:\n        x, y = Version(a), Version(b)\n    except InvalidVersion:\n        \
             print('invalid'); continue\n    print((x > y) - (x < y))\n",
        ],
    );
}

#[test]
fn npm_agrees_with_node_semver() {
    let mut v = strings(&[
        "1.0.0",
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0-0",
        "1.0.0-0.3.7",
        "1.0.0-x.7.z.92",
        "1.0.0-x-y-z.--",
        "1.0.0+build",
        "1.0.0+20130313144700",
        "1.0.0-beta+exp.sha.5114f85",
        "v1.0.0",
        "2.0.0",
        "2.1.0",
        "2.1.1",
        "10.0.0",
        "1.10.0",
        "1.2.3-a",
        "1.2.3-a.b",
        "1.2.3-a.1",
        "1.2.3-1",
        "1.2.3-01",
        "01.2.3",
        "1.2",
        "1.2.3.4",
        "1.2.3-",
        "1.2.3+",
        "0.0.0",
        "0.0.1-0",
        "9007199254740991.0.0",
        "1.2.3-Alpha",
        "1.2.3-alpha",
        "=1.2.3",
        " 1.2.3 ",
        "x.y.z",
        "",
    ]);
    let mut r = Rng(0x5e3);
    for _ in 0..30 {
        v.push(format!(
            "{}.{}.{}{}{}",
            r.below(3),
            r.below(12),
            r.below(4),
            r.pick(&[
                "", "-alpha", "-alpha.1", "-beta.2", "-rc.10", "-0", "-1.a", ""
            ]),
            r.pick(&["", "", "+build.1", "+sha.abc"]),
        ));
    }
    check(
        Scheme::Npm,
        &v,
        "node",
        &[
            "-e",
            "const semver = require('semver');\
             const lines = require('fs').readFileSync(0, 'utf8').split('\\n');\
             lines.pop();\
             for (const l of lines) { const [a, b] = l.split('\\t');\
               if (semver.valid(a) === null || semver.valid(b) === null) { console.log('invalid'); continue; }\
               console.log(semver.compare(a, b)); }",
        ],
    );
}

#[test]
fn rubygems_agrees_with_gem_version() {
    let mut v = strings(&[
        "1.0",
        "1.0.0",
        "1",
        "1.0.a",
        "1.0.a1",
        "1.0.a10",
        "1.0.a9",
        "1.0.b1",
        "1.0.0.pre",
        "1.0.0.pre1",
        "1.0.0.rc1",
        "1.0.0.rc.1",
        "1.0.0-1",
        "1.0.0-rc1",
        "1.0.0.beta2",
        "1.0.0.beta.2",
        "2.0.0.rc.1",
        "2.0.0.rc1",
        "1.0.0.a.0",
        "1.0.0.a",
        "",
        "0",
        "1.B",
        "1.a",
        "1.A",
        "1.0.0.1",
        "10.0",
        "9.99",
        "1.0.0.0.0.1",
        "3.2.0.alpha",
        "3.2.0.ALPHA",
        "1.2.3-beta-1",
        "a",
        "1..2",
        "1.",
        "-1",
        "1.0-",
        "1.0.0 ",
    ]);
    let mut r = Rng(0x9e3);
    for _ in 0..30 {
        v.push(format!(
            "{}.{}{}{}",
            r.below(4),
            r.below(11),
            r.pick(&["", ".0", ".1", ".10"]),
            r.pick(&["", ".pre", ".rc1", ".beta.2", "-alpha", ".a", ""]),
        ));
    }
    check(
        Scheme::Gem,
        &v,
        "ruby",
        &[
            "-e",
            "STDIN.each_line { |l| a, b = l.chomp(\"\\n\").split(\"\\t\", -1); \
             if Gem::Version.correct?(a) && Gem::Version.correct?(b) then \
             puts(Gem::Version.new(a) <=> Gem::Version.new(b)) else puts 'invalid' end }",
        ],
    );
}

#[test]
fn rpm_agrees_with_rpm() {
    let mut v = strings(&[
        "1.0",
        "1.0-1",
        "1.0-1.el9",
        "1.0-2.el9",
        "1.0-10.el9",
        "1:1.0-1.el9",
        "0:1.0-1.el9",
        "2:0.1-1",
        "1.0~rc1-1",
        "1.0~rc2-1",
        "1.0^git1-1",
        "1.0^-1",
        "1.0.1-1",
        "1.0a-1",
        "1.0-1.el9_2",
        "1.0-1.el9_2.1",
        "3.2.5-21.el9",
        "3.2.5-21.el9_2",
        "5.5p1-1",
        "5.5p10-1",
        "10xyz-1",
        "10.1xyz-1",
        "xyz10-1",
        "xyz10.1-1",
        "1_0-1",
        "001-1",
        "1-1",
        "a-1",
        "1.0-1.module+el8.5.0+1",
        "1.0-1.module+el8.6.0+2",
        "2.34-60.el9",
        "2.34-100.el9",
        "4.18.0-477.10.1.el8_8",
        "4.18.0-477.27.1.el8_8",
        "1.0~-1",
    ]);
    let mut r = Rng(0x3b5);
    for _ in 0..30 {
        v.push(format!(
            "{}{}.{}{}-{}{}",
            r.pick(&["", "", "1:", "0:"]),
            r.below(4),
            r.below(13),
            r.pick(&["", "~rc1", "^git2", "a", ".1", ""]),
            r.below(21),
            r.pick(&[".el9", ".el9_2", ".el8", ".fc40", ""]),
        ));
    }
    check(
        Scheme::Rpm,
        &v,
        "/usr/bin/python3",
        &[
            "-c",
            "import sys, rpm\n\
             for line in sys.stdin:\n    a, b = line.rstrip('\\n').split('\\t')\n    \
             x, y = rpm.ver(a), rpm.ver(b)\n    print((x > y) - (x < y))\n",
        ],
    );
}

#[test]
fn go_agrees_with_x_mod_semver() {
    let dir = std::env::temp_dir().join(format!("trusthub-go-oracle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let main = dir.join("main.go");
    std::fs::write(
        &main,
        "package main\n\nimport (\n\t\"bufio\"\n\t\"fmt\"\n\t\"os\"\n\t\"strings\"\n\n\t\"golang.org/x/mod/semver\"\n)\n\n\
         func v(s string) string {\n\tif strings.HasPrefix(s, \"v\") {\n\t\treturn s\n\t}\n\treturn \"v\" + s\n}\n\n\
         func main() {\n\ts := bufio.NewScanner(os.Stdin)\n\tfor s.Scan() {\n\t\tp := strings.SplitN(s.Text(), \"\\t\", 2)\n\
         \t\ta, b := v(p[0]), v(p[1])\n\t\tif !semver.IsValid(a) || !semver.IsValid(b) {\n\t\t\tfmt.Println(\"invalid\")\n\t\t\tcontinue\n\t\t}\n\
         \t\tfmt.Println(semver.Compare(a, b))\n\t}\n}\n",
    )
    .expect("write");
    let mut v = strings(&[
        "v1.0.0",
        "v1",
        "v1.0",
        "v1.2",
        "v1.2.0",
        "v1.2.3",
        "1.2.3",
        "v2.0.0+incompatible",
        "v2.0.0",
        "v2.0.1-pre",
        "v0.0.0-20191109021931-daa7c04131f5",
        "v0.0.0-20200101000000-aaaaaaaaaaaa",
        "v1.2.4-0.20191109021931-daa7c04131f5",
        "v1.2.4-pre.0.20191109021931-daa7c04131f5",
        "v1.2.3-alpha",
        "v1.2.3-alpha.1",
        "v1.2.3-alpha.beta",
        "v1.2.3-1",
        "v1.2.3-01",
        "v1.2-pre",
        "v01.2.3",
        "v1.2.3.4",
        "vx",
        "v1.2.3+meta",
        "v1+meta",
        "v10.0.0",
        "v1.10.0",
        "v0.0.0",
        "",
    ]);
    let mut r = Rng(0x60);
    for _ in 0..30 {
        v.push(format!(
            "v{}.{}.{}{}{}",
            r.below(3),
            r.below(12),
            r.below(4),
            r.pick(&[
                "",
                "-alpha",
                "-rc.1",
                "-0.20230101000000-abcdefabcdef",
                "-beta.2",
                ""
            ]),
            r.pick(&["", "", "+incompatible"]),
        ));
    }
    check(
        Scheme::Go,
        &v,
        "go",
        &["run", main.to_str().expect("utf-8")],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every CVSS v3.1 and v3.0 base vector (2 × 2,592) scored by us and by the `cvss` package of
/// PyPI (Red Hat's implementation of the FIRST specification).
/// Our score of each vector, to one decimal, is the oracle's.
fn agree_scores(vectors: &[String], answers: &[String], ours: fn(&str) -> Option<f64>) {
    let wrong: Vec<String> = vectors
        .iter()
        .zip(answers)
        .filter_map(|(v, want)| {
            let got = ours(v).map(|s| format!("{s:.1}"));
            (got.as_deref() != Some(want.as_str()))
                .then(|| format!("{v}: ours {got:?}, cvss {want}"))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {} disagree:\n{}",
        wrong.len(),
        vectors.len(),
        wrong
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn cvss_3_scores_agree_with_the_cvss_package() {
    let mut vectors = Vec::new();
    for version in ["3.1", "3.0"] {
        for av in ["N", "A", "L", "P"] {
            for ac in ["L", "H"] {
                for pr in ["N", "L", "H"] {
                    for ui in ["N", "R"] {
                        for s in ["U", "C"] {
                            for c in ["H", "L", "N"] {
                                for i in ["H", "L", "N"] {
                                    for a in ["H", "L", "N"] {
                                        vectors.push(format!(
                                            "CVSS:{version}/AV:{av}/AC:{ac}/PR:{pr}/UI:{ui}/S:{s}/C:{c}/I:{i}/A:{a}"
                                        ));
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    let pairs: Vec<(String, String)> = vectors.iter().map(|v| (v.clone(), String::new())).collect();
    let answers = oracle(
        "python3",
        &[
            "-c",
            "import sys\nfrom cvss import CVSS3\n\
             for line in sys.stdin:\n    v = line.rstrip('\\n').split('\\t')[0]\n    \
             print('%.1f' % CVSS3(v).scores()[0])\n",
        ],
        &pairs,
    );
    agree_scores(
        &vectors,
        &answers,
        trusthub_vulns::rules::osv::cvss3_base_score,
    );
    assert_eq!(vectors.len(), 5184);
}

// ---- ranges (CVE suppressions) ----------------------------------------------------------------

/// Every range against every version: ours (`Range::parse` + `contains`) against the native
/// tool's answer `true`, `false` or `invalid` (range or version unreadable).
fn check_ranges(
    scheme: Scheme,
    ranges: &[String],
    versions: &[String],
    program: &str,
    args: &[&str],
) {
    use trusthub_vulns::rules::version::range::Range;
    let mut pairs = Vec::new();
    for r in ranges {
        for v in versions {
            pairs.push((r.clone(), v.clone()));
        }
    }
    let answers = oracle(program, args, &pairs);
    let mut wrong = Vec::new();
    let mut agreed_true = 0;
    for ((r, v), want) in pairs.iter().zip(&answers) {
        let got = match Range::parse(scheme, r) {
            Err(_) => "invalid".to_owned(),
            Ok(range) => match range.contains(v) {
                Ok(b) => b.to_string(),
                Err(_) => "invalid".to_owned(),
            },
        };
        if got != want.trim() {
            wrong.push(format!(
                "{v:?} in {r:?}: ours {got}, {program} {}",
                want.trim()
            ));
        } else if got == "true" {
            agreed_true += 1;
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} disagree with {program}:\n{}",
        wrong.len(),
        pairs.len(),
        wrong
            .iter()
            .take(30)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(pairs.len() >= 500, "{} pairs", pairs.len());
    assert!(
        agreed_true * 10 >= pairs.len(),
        "too few matches to mean anything: {agreed_true}"
    );
}

#[test]
fn npm_ranges_agree_with_node_semver_satisfies() {
    let ranges = strings(&[
        "^1.2.3",
        "^0.2.3",
        "^0.0.3",
        "^1.2",
        "^0.0",
        "^0.x",
        "^1.x",
        "^1.2.3-beta.2",
        "~1.2.3",
        "~1.2",
        "~1",
        "~0.2.3-rc.1",
        "~>1.2",
        "1.x",
        "1.2.x",
        "1.2.*",
        "*",
        "x",
        "1.2.3 - 2.3.4",
        "1.2 - 2.3.4",
        "1.2.3 - 2.3",
        "1.2.3 - 2",
        ">1.2",
        ">=1.2.3 <2",
        "<1",
        "<=1.2",
        ">1",
        "<1.2.3-beta",
        ">=1.2.3-alpha.1 <1.2.4",
        "1.2.3",
        "=1.2.3",
        "v1.2.3",
        "<1.0.0 || >=2.1",
        ">= 1.2.3 < 1.5",
        "1.2.3-rc.1",
        ">=0.0.0",
        "^1.2.3.4",
        "1.2.3 -",
        "01.2.3",
        ">=1.2.3,<2",
        "^",
        "banana",
        "1.2.3 - 2.3.4 - 5",
    ]);
    let versions = strings(&[
        "0.0.0",
        "0.0.3",
        "0.0.4",
        "0.1.0",
        "0.2.3",
        "0.2.9",
        "0.3.0",
        "0.9.0",
        "1.0.0",
        "1.0.0-rc.1",
        "1.2.0",
        "1.2.2",
        "1.2.3",
        "1.2.3-alpha.1",
        "1.2.3-beta.2",
        "1.2.3-beta.10",
        "1.2.3-rc.1",
        "1.2.4",
        "1.2.9",
        "1.3.0",
        "1.5.0-beta",
        "1.9.9",
        "2.0.0",
        "2.0.0-0",
        "2.1.0",
        "2.3.4",
        "2.3.5",
        "2.4.0-beta",
        "3.0.0",
        "v1.2.3",
        "1.2",
        "1.2.3.4",
    ]);
    check_ranges(
        Scheme::Npm,
        &ranges,
        &versions,
        "node",
        &[
            "-e",
            "const semver = require('semver');\
             const lines = require('fs').readFileSync(0, 'utf8').split('\\n');\
             lines.pop();\
             for (const l of lines) { const [r, v] = l.split('\\t');\
               if (semver.validRange(r) === null || semver.valid(v) === null) { console.log('invalid'); continue; }\
               console.log(String(semver.satisfies(v, r))); }",
        ],
    );
}

#[test]
fn pep_440_specifiers_agree_with_python_packaging() {
    let ranges = strings(&[
        ">=1.0,<2.0",
        ">=1.0, <2.0",
        "~=2.2",
        "~=2.2.0",
        "~=1.4.5a4",
        "~=2.2.post3",
        "==1.1.*",
        "==1.*",
        "!=1.1.*",
        "==1.0",
        "==1.0+local",
        "!=1.0",
        ">1.0",
        "<2.0",
        "<2.0rc1",
        ">1.0.post1",
        ">=1.0.dev0",
        "<=1.1",
        "==1!2.*",
        ">=0",
        "<1!0",
        "1.0",
        "~=1",
        ">=1.0+local",
        "==1.0.*.*",
        ">=",
        ">=1.0,,<2",
        "=>1.0",
    ]);
    let versions = strings(&[
        "0.9",
        "1.0",
        "1.0.0",
        "1.0+local",
        "1.0+other",
        "1.0.post1",
        "1.0a1",
        "1.0.dev1",
        "1.1",
        "1.1.0",
        "1.1.post1",
        "1.1a1",
        "1.4.5",
        "1.4.5a4",
        "1.4.9",
        "1.5",
        "1.9.9",
        "2.0",
        "2.0rc1",
        "2.0.dev1",
        "2.2",
        "2.2.0",
        "2.2.1",
        "2.2.post3",
        "2.2.post4",
        "2.3",
        "2.9",
        "3.0",
        "1!2.0",
        "1!2.5",
        "v1.0",
        "not-a-version",
    ]);
    check_ranges(
        Scheme::Pep440,
        &ranges,
        &versions,
        "/usr/bin/python3",
        &[
            "-c",
            r#"import sys
from packaging.specifiers import SpecifierSet, InvalidSpecifier
from packaging.version import Version, InvalidVersion
for line in sys.stdin.read().split('\n')[:-1]:
    r, v = line.split('\t')
    try:
        s = SpecifierSet(r)
        ver = Version(v)
    except (InvalidSpecifier, InvalidVersion):
        print('invalid'); continue
    print(str(s.contains(ver, prereleases=True)).lower())
"#,
        ],
    );
}

#[test]
fn rubygems_requirements_agree_with_gem_requirement() {
    let ranges = strings(&[
        "~> 2.2",
        "~> 2.2.0",
        "~>2.2.1",
        "~> 1.0.0.pre",
        "~> 0",
        ">= 1.0, < 2.0",
        "!= 1.2.5",
        "= 1.0",
        "1.0",
        "> 1.0",
        "<= 1.1",
        "~> 2.2, != 2.2.5",
        ">= 1.0.a",
        "< 2.0.pre",
        ">= 1.0, ",
        "=> 1.0",
        "~>",
        "~> 1.0 2.0",
        "~> 1.0.pre",
        ">1.0,<=2.2.1",
        "< 1.0.0.pre1",
        "= 2.2.0",
        "~> 10",
    ]);
    let versions = strings(&[
        "0.9",
        "1.0",
        "1.0.0",
        "1.0.a",
        "1.0.pre",
        "1.0.0.pre1",
        "1.1",
        "1.2.5",
        "1.9.9",
        "2.0",
        "2.0.pre",
        "2.0-rc1",
        "2.2",
        "2.2.0",
        "2.2.1",
        "2.2.5",
        "2.2.9",
        "2.3",
        "2.9",
        "3.0",
        "10.0",
        "1..0",
        "",
    ]);
    check_ranges(
        Scheme::Gem,
        &ranges,
        &versions,
        "ruby",
        &[
            "-e",
            "STDIN.read.split(\"\\n\").each do |l|\n\
  r, v = l.split(\"\\t\", 2)\n\
  v = v.to_s\n\
  begin\n\
    raise ArgumentError if v.strip.empty? || !Gem::Version.correct?(v)\n\
    req = Gem::Requirement.new(*r.split(','))\n\
    puts req.satisfied_by?(Gem::Version.new(v)).to_s\n\
  rescue ArgumentError, Gem::Requirement::BadRequirementError\n\
    puts 'invalid'\n\
  end\n\
end",
        ],
    );
}

#[test]
fn composer_agrees_with_composer_semver() {
    let mut v = strings(&[
        "1.0.0",
        "1.0",
        "1",
        "v1.0.0",
        "1.0.0.0",
        "1.0.0.1",
        "1.0.0-dev",
        "1.0.0-alpha",
        "1.0.0-alpha1",
        "1.0.0-alpha.2",
        "1.0.0-a2",
        "1.0.0alpha3",
        "1.0.0-beta",
        "1.0.0-beta.11",
        "1.0.0-b2",
        "1.0.0-RC1",
        "1.0.0-rc.2",
        "1.0.0RC10",
        "1.0.0-p1",
        "1.0.0-pl2",
        "1.0.0-patch3",
        "1.0.0-stable",
        "1.0.0-alpha3-dev",
        "1.0.0-beta.1.dev",
        "1.0.0+build.5",
        "1.0.0-",
        "1.10.0",
        "1.9.9",
        "2.0.0-Beta2",
        "2.0.0-BETA.3",
        "2010-01-02",
        "2010.01.02.5",
        "20100102",
        "1.x-dev",
        "1.0.x-dev",
        "2.*-dev",
        "dev-main",
        "master",
        "banana",
        "1.0.0.0.0",
        "100000.0.0",
        "99999.0.0",
        "1.0.0 as 2.0.0",
        "",
    ]);
    let mut r = Rng(0xc0ffee);
    for _ in 0..40 {
        v.push(format!(
            "{}{}.{}{}{}",
            r.pick(&["", "", "v"]),
            r.below(4),
            r.below(13),
            r.pick(&["", ".0", ".3", ".0.1"]),
            r.pick(&[
                "",
                "",
                "-alpha1",
                "-beta",
                "-RC2",
                "-p1",
                "-dev",
                "-beta2-dev",
                "rc1",
                ".b3"
            ]),
        ));
    }
    check(
        Scheme::Composer,
        &v,
        "php",
        &[
            "-r",
            "require '/usr/share/php/Composer/Semver/autoload.php';\
             $p = new Composer\\Semver\\VersionParser();\
             while (($l = fgets(STDIN)) !== false) {\
               [$a, $b] = explode(\"\\t\", rtrim($l, \"\\n\"));\
               try { $na = $p->normalize($a); $nb = $p->normalize($b); }\
               catch (\\UnexpectedValueException $e) { echo \"invalid\\n\"; continue; }\
               if (strpos($na, 'dev-') === 0 || strpos($nb, 'dev-') === 0) { echo \"invalid\\n\"; continue; }\
               echo version_compare($na, $nb), \"\\n\"; }",
        ],
    );
}

#[test]
fn cvss_4_scores_agree_with_the_cvss_package() {
    // A deterministic sample of the 104,976 base vectors (every metric value appears many
    // times), plus threat and environmental metrics on some of them.
    let mut r = Rng(0x4004);
    let mut vectors = Vec::new();
    for i in 0..6000 {
        let mut v = format!(
            "CVSS:4.0/AV:{}/AC:{}/AT:{}/PR:{}/UI:{}/VC:{}/VI:{}/VA:{}/SC:{}/SI:{}/SA:{}",
            r.pick(&["N", "A", "L", "P"]),
            r.pick(&["L", "H"]),
            r.pick(&["N", "P"]),
            r.pick(&["N", "L", "H"]),
            r.pick(&["N", "P", "A"]),
            r.pick(&["H", "L", "N"]),
            r.pick(&["H", "L", "N"]),
            r.pick(&["H", "L", "N"]),
            r.pick(&["H", "L", "N"]),
            r.pick(&["H", "L", "N"]),
            r.pick(&["H", "L", "N"]),
        );
        if i % 3 == 0 {
            v.push_str(&format!("/E:{}", r.pick(&["X", "A", "P", "U"])));
        }
        if i % 5 == 0 {
            v.push_str(&format!(
                "/CR:{}/IR:{}/AR:{}/MAV:{}/MSI:{}",
                r.pick(&["X", "H", "M", "L"]),
                r.pick(&["X", "H", "M", "L"]),
                r.pick(&["X", "H", "M", "L"]),
                r.pick(&["X", "N", "A", "L", "P"]),
                r.pick(&["X", "N", "L", "H", "S"]),
            ));
        }
        vectors.push(v);
    }
    vectors.sort();
    vectors.dedup();
    let pairs: Vec<(String, String)> = vectors.iter().map(|v| (v.clone(), String::new())).collect();
    let answers = oracle(
        "python3",
        &[
            "-c",
            "import sys\nfrom cvss import CVSS4\n\
             for line in sys.stdin:\n    v = line.rstrip('\\n').split('\\t')[0]\n    \
             print('%.1f' % CVSS4(v).base_score)\n",
        ],
        &pairs,
    );
    agree_scores(&vectors, &answers, trusthub_vulns::rules::osv::cvss4_score);
    assert!(vectors.len() > 5000, "{}", vectors.len());
}

#[test]
fn composer_constraints_agree_with_composer_semver_satisfies() {
    let ranges = strings(&[
        "^1.2.3",
        "^1.2",
        "^1",
        "^0.3",
        "^0.0.3",
        "^0.0",
        "^0",
        "^1.2.3-beta2",
        "~1.2",
        "~1.2.3",
        "~1",
        "~0.3",
        "~1.2.3-RC1",
        "1.2.*",
        "1.*",
        "1.x",
        "*",
        "v1.2.*",
        "1.0 - 2.0",
        "1.0.0 - 2.1.0",
        "1.2 - 2",
        ">=1.0",
        ">=1.0 <2.0",
        ">=1.0,<2.0",
        ">= 1.0, < 1.4.2",
        "<1.2.3",
        "<=1.2.3",
        ">1.2",
        "!=1.5.0",
        "<>1.5",
        "1.2.3",
        "==1.2.3",
        "=1.2",
        "^1.2 || ^2.0",
        "~1.2|~2.3",
        ">=1.0-beta <1.0",
        "<2.0-stable",
        "^1.2.3 !=1.2.5",
        "^1.2.3.4",
        "~>1.2",
        "@dev",
        "^",
        "banana",
        "1.0 - ",
        ">=1.0 <2.0 || >=3.0",
    ]);
    let versions = strings(&[
        "0.0.1",
        "0.0.3",
        "0.0.4",
        "0.3.0",
        "0.3.9",
        "0.4.0",
        "0.9.0",
        "1.0.0-beta",
        "1.0.0-RC1",
        "1.0.0",
        "1.0",
        "v1.1.0",
        "1.2.0-dev",
        "1.2.0-alpha1",
        "1.2.0",
        "1.2.2",
        "1.2.3-beta2",
        "1.2.3-RC1",
        "1.2.3",
        "1.2.3-p1",
        "1.2.4",
        "1.2.5",
        "1.3.0",
        "1.4.1",
        "1.4.2",
        "1.5.0",
        "1.9.9",
        "2.0.0-dev",
        "2.0.0-beta1",
        "2.0.0",
        "2.0.5",
        "2.1.0",
        "2.1.1",
        "2.3.0",
        "2.4.0",
        "3.0.0",
        "dev-main",
    ]);
    check_ranges(
        Scheme::Composer,
        &ranges,
        &versions,
        "php",
        &[
            "-r",
            "require '/usr/share/php/Composer/Semver/autoload.php';\
             $p = new Composer\\Semver\\VersionParser();\
             while (($l = fgets(STDIN)) !== false) {\
               [$r, $v] = explode(\"\\t\", rtrim($l, \"\\n\"));\
               try { $p->parseConstraints($r); $n = $p->normalize($v); }\
               catch (\\Exception $e) { echo \"invalid\\n\"; continue; }\
               if (strpos($n, 'dev-') === 0 || strpos($r, '@') !== false) { echo \"invalid\\n\"; continue; }\
               echo Composer\\Semver\\Semver::satisfies($v, $r) ? \"true\\n\" : \"false\\n\"; }",
        ],
    );
}
