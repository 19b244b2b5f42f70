//! Tests of [`super`] (sender).

use super::*;

#[test]
fn receivers_take_basic_auth_from_userinfo_and_never_show_it() {
    let rw = RemoteWrite::from_settings(
        &[
            "http://user:p%40ss@127.0.0.1:8428/api/v1/write".into(),
            " https://vm.example/api/v1/write ".into(),
        ],
        Some("tok"),
    )
    .expect("valid");
    assert_eq!(rw.receivers[0].label, "http://127.0.0.1:8428/api/v1/write");
    assert_eq!(
        rw.receivers[0].auth,
        Auth::Basic("user".into(), Some("p@ss".into()))
    );
    assert_eq!(rw.receivers[1].auth, Auth::Bearer("tok".into()));
    assert!(!rw.exposition().contains("p%40ss"));
    let bad =
        RemoteWrite::from_settings(&["ftp://u:secret@x/".into()], None).expect_err("not http");
    assert!(!bad.contains("secret"), "{bad}");
    assert!(RemoteWrite::from_settings(&["nope".into()], None).is_err());
    assert!(
        RemoteWrite::from_settings(&["http://a/w".into(), "http://u:p@a/w".into()], None).is_err()
    );
    assert!(
        !RemoteWrite::from_settings(&[], None)
            .expect("off")
            .enabled()
    );
}
