//! Serving a fake provider API: over HTTP, or over HTTPS behind a certificate for
//! `localhost` that the test trusts (for the official libraries that speak only HTTPS).

/// Where a fake listens.
pub struct Served {
    /// `http://127.0.0.1:<port>` or `https://localhost:<port>`.
    pub base: String,
    /// The certificate to trust (PEM), for HTTPS.
    pub ca_pem: Option<String>,
    /// Its file, for libraries that take a path.
    pub ca_file: Option<std::path::PathBuf>,
}

/// Serves `app` on a free port.
pub async fn serve(app: axum::Router, tls: bool) -> Served {
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = tcp.local_addr().expect("addr").port();
    if !tls {
        tokio::spawn(async move {
            let _ = axum::serve(tcp, app).await;
        });
        return Served {
            base: format!("http://127.0.0.1:{port}"),
            ca_pem: None,
            ca_file: None,
        };
    }
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("cert");
    let pem = cert.cert.pem();
    let file = std::env::temp_dir().join(format!(
        "trusthub-fake-ca-{}.pem",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::write(&file, &pem).expect("ca file");
    let acceptor = trusthub_platform::tls::acceptor_from_pem(
        pem.as_bytes(),
        cert.signing_key.serialize_pem().as_bytes(),
        None,
    )
    .expect("acceptor");
    let listener = trusthub_platform::tls::TlsListener::new(tcp, acceptor).expect("tls");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Served {
        base: format!("https://localhost:{port}"),
        ca_pem: Some(pem),
        ca_file: Some(file),
    }
}
