//! A small client of the W3C WebDriver protocol over reqwest, driving Debian's Chromium
//! through its `chromedriver`: start (headless, a fresh profile), navigate, find, type, click,
//! wait for text, screenshots under `target/browser/<test>/`, and the browser's error log.
//! Shared by the hub's and the agent's browser tests (`#[path]`-included there).
//! `.ci/run` installs `chromium` and `chromium-driver`; without them (outside CI) `start`
//! answers `None` and the tests say so and pass.

use serde_json::{Value, json};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A fresh Chromium profile directory, removed afterwards.
struct Profile(std::path::PathBuf);

impl Drop for Profile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A Chromium session.
pub struct Browser {
    http: reqwest::Client,
    url: String,
    driver: Child,
    _profile: Profile,
    /// Where screenshots go.
    pub shots: std::path::PathBuf,
    /// One browser at a time in this test process: two Chromiums and their hubs on two cores
    /// starve each other until clicks and navigations race (held until the browser is gone).
    _turn: tokio::sync::OwnedMutexGuard<()>,
}

/// Whose turn it is to drive a browser.
fn turns() -> std::sync::Arc<tokio::sync::Mutex<()>> {
    static TURN: std::sync::OnceLock<std::sync::Arc<tokio::sync::Mutex<()>>> =
        std::sync::OnceLock::new();
    TURN.get_or_init(Default::default).clone()
}

impl Drop for Browser {
    /// Ends the WebDriver session first, so chromedriver closes Chromium (killing only the
    /// driver left every Chromium process of the test running).
    fn drop(&mut self) {
        use std::io::{Read, Write};
        let session = self
            .url
            .strip_prefix("http://")
            .and_then(|r| r.split_once('/'))
            .map(|(host, path)| (host.to_owned(), format!("/{path}")));
        if let Some((host, path)) = session
            && let Ok(mut s) = std::net::TcpStream::connect(&host)
        {
            let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
            let _ = write!(
                s,
                "DELETE {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let mut answer = Vec::new();
            let _ = s.read_to_end(&mut answer);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Browser {
    /// Starts chromedriver and a headless Chromium; `None` when they are not installed
    /// (mandatory under CI).
    pub async fn start(test: &str) -> Option<Browser> {
        let turn = turns().lock_owned().await;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("port");
        let driver = match Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(c) => c,
            Err(e) if std::env::var_os("CI").is_none() => {
                eprintln!(
                    "browser test skipped: chromedriver not found ({e}); apt-get install chromium chromium-driver"
                );
                return None;
            }
            Err(e) => panic!("chromedriver is mandatory in CI: {e}"),
        };
        // Bounded: a stuck browser fails its test instead of holding the suite.
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .expect("client");
        let base = format!("http://127.0.0.1:{port}");
        for _ in 0..100 {
            if http.get(format!("{base}/status")).send().await.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let profile = Profile(std::env::temp_dir().join(format!(
            "trusthub-chromium-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        )));
        std::fs::create_dir_all(&profile.0).expect("profile dir");
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--window-size=1280,900",
                    format!("--user-data-dir={}", profile.0.display())]
            },
            "goog:loggingPrefs": {"browser": "ALL"}
        }}});
        let r: Value = http
            .post(format!("{base}/session"))
            .json(&caps)
            .send()
            .await
            .expect("new session")
            .json()
            .await
            .expect("json");
        let session = r["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no browser session: {r}"))
            .to_owned();
        let shots = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/browser")
            .join(test);
        let _ = std::fs::remove_dir_all(&shots);
        std::fs::create_dir_all(&shots).expect("screenshot dir");
        Some(Browser {
            http,
            url: format!("{base}/session/{session}"),
            driver,
            _profile: profile,
            shots,
            _turn: turn,
        })
    }

    async fn cmd(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method, format!("{}{path}", self.url));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let v: Value = req
            .send()
            .await
            .expect("webdriver")
            .json()
            .await
            .expect("json");
        v["value"].clone()
    }

    /// Signs in through the form.
    pub async fn sign_in(&self, base: &str, email: &str, password: &str) {
        self.goto(&format!("{base}/login")).await;
        self.type_into("input[name=email]", email).await;
        self.type_into("input[name=password]", password).await;
        self.click("button[type=submit]").await;
        self.find("header.top").await;
    }

    /// Opens a URL and waits for the page to load.
    pub async fn goto(&self, url: &str) {
        self.cmd(reqwest::Method::POST, "/url", Some(json!({"url": url})))
            .await;
    }

    /// The element for a CSS selector, waiting up to 15 s for it (CI runs many tests at once).
    pub async fn find(&self, css: &str) -> String {
        for _ in 0..150 {
            let v = self
                .cmd(
                    reqwest::Method::POST,
                    "/element",
                    Some(json!({"using": "css selector", "value": css})),
                )
                .await;
            if let Some(id) = v
                .as_object()
                .and_then(|o| o.values().next())
                .and_then(Value::as_str)
            {
                return id.to_owned();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no element {css} in:\n{}", self.source().await);
    }

    /// Waits up to 15 s until no element matches (the page after a form has replaced the
    /// one the form was on).
    pub async fn wait_gone(&self, css: &str) {
        for _ in 0..150 {
            let v = self
                .cmd(
                    reqwest::Method::POST,
                    "/elements",
                    Some(json!({"using": "css selector", "value": css})),
                )
                .await;
            if v.as_array().is_some_and(Vec::is_empty) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{css} is still there:\n{}", self.source().await);
    }

    /// Types into the element.
    pub async fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css).await;
        self.cmd(
            reqwest::Method::POST,
            &format!("/element/{id}/value"),
            Some(json!({"text": text})),
        )
        .await;
    }

    /// Sets a form field's value directly (for inputs, like dates, whose typing depends on the
    /// browser's locale).
    pub async fn set_value(&self, css: &str, value: &str) {
        self.find(css).await;
        self.cmd(
            reqwest::Method::POST,
            "/execute/sync",
            Some(
                json!({"script": "document.querySelector(arguments[0]).value = arguments[1];",
                "args": [css, value]}),
            ),
        )
        .await;
    }

    /// Clicks the element.
    pub async fn click(&self, css: &str) {
        let id = self.find(css).await;
        // A link in a closed menu group is reached as a person reaches it: the group opened
        // first (its summary clicked).
        let closed = self
            .cmd(
                reqwest::Method::POST,
                "/execute/sync",
                Some(json!({"script": "var e = document.querySelector(arguments[0]); var d = e && e.tagName !== 'SUMMARY' && e.closest('details.menu'); return d && !d.open ? true : false;",
                    "args": [css]})),
            )
            .await;
        if closed == true {
            let summary = self
                .cmd(
                    reqwest::Method::POST,
                    "/execute/sync",
                    Some(json!({"script": "document.querySelector(arguments[0]).closest('details.menu').querySelector('summary').click(); return true;",
                        "args": [css]})),
                )
                .await;
            assert_eq!(summary, true, "the menu group of {css} opens");
        }
        self.cmd(
            reqwest::Method::POST,
            &format!("/element/{id}/click"),
            Some(json!({})),
        )
        .await;
        // A click that submits a form or follows a link replaces the page: wait until the
        // clicked element is gone with it, so the next step cannot act on the old page. A
        // click that changes nothing (a disclosure, a copy button) is given 1.5 s.
        for _ in 0..15 {
            let v = self
                .cmd(reqwest::Method::GET, &format!("/element/{id}/name"), None)
                .await;
            if v.get("error").is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Clicks `css`, answers the confirmation the click opens (accept, or dismiss) and
    /// returns its question; an accepted one waits for the page to be replaced, as `click`.
    pub async fn click_confirm(&self, css: &str, accept: bool) -> String {
        let id = self.find(css).await;
        self.cmd(
            reqwest::Method::POST,
            &format!("/element/{id}/click"),
            Some(json!({})),
        )
        .await;
        let mut question = String::new();
        for _ in 0..50 {
            if let Some(t) = self
                .cmd(reqwest::Method::GET, "/alert/text", None)
                .await
                .as_str()
            {
                question = t.to_owned();
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(!question.is_empty(), "clicking {css} asked nothing");
        let answer = if accept {
            "/alert/accept"
        } else {
            "/alert/dismiss"
        };
        self.cmd(reqwest::Method::POST, answer, Some(json!({})))
            .await;
        if accept {
            for _ in 0..15 {
                let v = self
                    .cmd(reqwest::Method::GET, &format!("/element/{id}/name"), None)
                    .await;
                if v.get("error").is_some() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        question
    }

    /// The visible text of the element, once it has some (asked again while the page is
    /// still being replaced and the element found a moment ago is stale).
    pub async fn text(&self, css: &str) -> String {
        for _ in 0..150 {
            let id = self.find(css).await;
            let v = self
                .cmd(reqwest::Method::GET, &format!("/element/{id}/text"), None)
                .await;
            if let Some(t) = v.as_str().filter(|t| !t.is_empty()) {
                return t.to_owned();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{css} has no text in:\n{}", self.source().await);
    }

    /// A PNG of the element as drawn, also saved as `<name>.png`.
    pub async fn element_png(&self, css: &str, name: &str) -> std::path::PathBuf {
        let id = self.find(css).await;
        let b64 = self
            .cmd(
                reqwest::Method::GET,
                &format!("/element/{id}/screenshot"),
                None,
            )
            .await;
        let png = data_encoding::BASE64
            .decode(b64.as_str().unwrap_or_default().as_bytes())
            .expect("png");
        let path = self.shots.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("write element screenshot");
        path
    }

    /// The page's HTML as the browser has it now (asked again while a navigation makes the
    /// driver answer with an error instead of a document).
    pub async fn source(&self) -> String {
        for _ in 0..50 {
            if let Some(s) = self
                .cmd(reqwest::Method::GET, "/source", None)
                .await
                .as_str()
            {
                return s.to_owned();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        String::new()
    }

    /// Waits up to 15 s until the page's HTML contains `text` (the page a form or link leads
    /// to may still be loading when the previous step returns) and gives that HTML.
    pub async fn wait_text(&self, text: &str) -> String {
        let mut page = String::new();
        for _ in 0..150 {
            page = self.source().await;
            if page.contains(text) {
                return page;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{text:?} never appeared in:\n{page}");
    }

    /// The current URL.
    pub async fn current_url(&self) -> String {
        self.cmd(reqwest::Method::GET, "/url", None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Saves a PNG screenshot as `<name>.png`.
    /// Resizes the window (a phone: 390 × 844).
    pub async fn resize(&self, width: u32, height: u32) {
        self.cmd(
            reqwest::Method::POST,
            "/window/rect",
            Some(json!({"width": width, "height": height})),
        )
        .await;
    }

    pub async fn screenshot(&self, name: &str) {
        let b64 = self.cmd(reqwest::Method::GET, "/screenshot", None).await;
        let png = data_encoding::BASE64
            .decode(b64.as_str().unwrap_or_default().as_bytes())
            .expect("png");
        std::fs::write(self.shots.join(format!("{name}.png")), png).expect("write screenshot");
    }

    /// Runs `script` (a function body; `arguments` are empty) in the page and gives what it
    /// returns.
    pub async fn eval(&self, script: &str) -> Value {
        self.cmd(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
        .await
    }

    /// Moves the pointer over `css` to `(x, y)` pixels from its centre; with `drag_to`,
    /// presses there, moves to that offset and releases (a drag across it).
    pub async fn pointer(&self, css: &str, at: (i64, i64), drag_to: Option<(i64, i64)>) {
        let id = self.find(css).await;
        let origin = json!({"element-6066-11e4-a52e-4f735466cecf": id});
        let mut steps = vec![
            json!({"type": "pointerMove", "duration": 0, "origin": origin, "x": at.0, "y": at.1}),
        ];
        if let Some((x, y)) = drag_to {
            steps.push(json!({"type": "pointerDown", "button": 0}));
            steps.push(
                json!({"type": "pointerMove", "duration": 200, "origin": origin, "x": x, "y": y}),
            );
            steps.push(json!({"type": "pointerUp", "button": 0}));
        }
        self.cmd(
            reqwest::Method::POST,
            "/actions",
            Some(json!({"actions": [{"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"}, "actions": steps}]})),
        )
        .await;
        self.cmd(reqwest::Method::DELETE, "/actions", None).await;
    }

    /// Fails on any error the page's JavaScript logged (or a resource it failed to load, a
    /// refused by the content security policy included).
    pub async fn assert_no_js_errors(&self) {
        let log = self
            .cmd(
                reqwest::Method::POST,
                "/se/log",
                Some(json!({"type": "browser"})),
            )
            .await;
        let errors: Vec<&Value> = log
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["level"] == "SEVERE")
            // A page answered with a 4xx on purpose (a form shown again with its error, a
            // refusal page: the document itself, not a resource it loads) is logged by
            // Chromium as a failed load; that is not an error.
            .filter(|e| {
                let m = e["message"].as_str().unwrap_or_default();
                let deliberate = m.contains("status of 4");
                !(e["source"] == "network" && deliberate && !m.contains("/assets/"))
            })
            .collect();
        assert!(errors.is_empty(), "browser errors: {errors:?}");
    }
}
