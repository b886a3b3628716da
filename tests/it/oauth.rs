//! OAuth refresh as huggingface_hub 2.4 does it (issue 11, item 1): a stored
//! browser-login token with less than a day left is exchanged at
//! `/oauth/token`, `stored_tokens` and the token file are rewritten the way
//! huggingface_hub rewrites them, and Python then reads the same token.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use kernels_test_support::hostile::{Hostile, Play};
use kernels_test_support::{GELU_SHA, TestContext, kernels, pyref_python, snapshot, stderr};

const OLD: &str = "hf_oauth_old_access";
const FRESH: &str = "hf_oauth_fresh_access";

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A world whose acme/gelu answers only to [`FRESH`], behind a front that
/// plays the Hub's `/oauth/token` (recording the form it received).
fn private_world() -> (TestContext, Hostile, Arc<Mutex<Vec<String>>>) {
    let world = TestContext::world_with(|mirror| {
        fs_err::write(
            mirror.join("repos/kernels/acme/gelu/repo.toml"),
            format!(
                "commits = [\"c1\"]\nprivate = true\nallowed_tokens = [\"{FRESH}\"]\nlfs = [\"*.so\"]\n\n[branches]\nmain = \"c1\"\n"
            ),
        )
        .unwrap();
    });
    let forms = Arc::new(Mutex::new(Vec::new()));
    let seen = forms.clone();
    let front = Hostile::start("127.0.0.1", &world.server.endpoint, move |r| {
        if r.method == "POST" && r.path == "/oauth/token" {
            let form = String::from_utf8_lossy(r.body).into_owned();
            seen.lock().unwrap().push(form.clone());
            // Matching the request to answer, not asserting output.
            if form.contains("refresh_token=hf_refresh_1")
                || form.contains(r#""subject_token":"ci-id-token""#)
            {
                return Play::json(
                    "200 OK",
                    "",
                    &format!(
                        r#"{{"access_token": "{FRESH}", "token_type": "bearer", "expires_in": 28800, "refresh_token": "hf_refresh_2"}}"#
                    ),
                );
            }
            return Play::json("400 Bad Request", "", r#"{"error": "invalid_grant"}"#);
        }
        Play::Forward
    });
    (world, front, forms)
}

fn write_login(hf_home: &Path, expires_at: i64) {
    fs_err::create_dir_all(hf_home).unwrap();
    fs_err::write(hf_home.join("token"), OLD).unwrap();
    fs_err::write(
        hf_home.join("stored_tokens"),
        format!(
            "[browser]\nhf_token = {OLD}\nrefresh_token = hf_refresh_1\nexpires_at = {expires_at}\n\n[ci]\nhf_token = hf_ci_token\n\n"
        ),
    )
    .unwrap();
}

fn lock(world: &TestContext, front: &Hostile, hf_home: &Path) -> std::process::Output {
    fs_err::write(
        world.project.join("pyproject.toml"),
        // The acme builds predate metadata.json: a variant-hash lock (≤0.16).
        "[tool.kernels]\ntarget-runtime = \"0.16.2\"\n\n[tool.kernels.dependencies]\n\"acme/gelu\" = { revision = \"main\" }\n",
    )
    .unwrap();
    kernels(&front.base, &world.cache)
        .env("HF_HOME", hf_home)
        .arg("lock")
        .arg(&world.project)
        .output()
        .unwrap()
}

#[test]
fn expiring_oauth_token_is_refreshed_like_huggingface_hub() {
    let (world, front, forms) = private_world();
    let hf_home = world.project.parent().unwrap().join("hf");
    write_login(&hf_home, now() + 3600);

    let before = now();
    let out = lock(&world, &front, &hf_home);
    let after = now();
    assert!(out.status.success(), "{}", stderr(&out));
    let lock = fs_err::read_to_string(world.project.join("kernels.lock")).unwrap();
    assert_eq!(crate::sticky::locked_commits(&lock), [GELU_SHA], "{lock}");

    let forms = forms.lock().unwrap().clone();
    assert_eq!(forms.len(), 1, "{forms:?}");
    assert_eq!(
        forms[0],
        "grant_type=refresh_token&refresh_token=hf_refresh_1&client_id=26be6b09-91c5-47da-9861-d2d2bb7a7e36"
    );
    // The refresh request carries no token; the Hub requests carry the fresh one.
    let received = String::from_utf8_lossy(&front.received()).into_owned();
    // Substring checks over raw requests: a token must appear nowhere, or somewhere.
    assert!(!received.contains(OLD), "the expiring token was sent");
    assert!(received.contains(&format!("Bearer {FRESH}")));

    // The token file holds the fresh token; stored_tokens has the section
    // rewritten (hf_token, refresh_token, expires_at), sections sorted by name.
    assert_eq!(
        fs_err::read_to_string(hf_home.join("token")).unwrap(),
        FRESH
    );
    let stored = fs_err::read_to_string(hf_home.join("stored_tokens")).unwrap();
    let expires_at: i64 = stored
        .lines()
        .find_map(|l| l.strip_prefix("expires_at = "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        before + 28800 <= expires_at && expires_at <= after + 28800,
        "{stored}"
    );
    assert_eq!(
        stored,
        format!(
            "[browser]\nhf_token = {FRESH}\nrefresh_token = hf_refresh_2\nexpires_at = {expires_at}\n\n[ci]\nhf_token = hf_ci_token\n\n"
        )
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs_err::metadata(hf_home.join("stored_tokens"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert!(hf_home.join("stored_tokens.lock").exists());

    // huggingface_hub 2.4 reads the same token, and writes the same file.
    let python = pyref_python("hub-2.4.0");
    let script = format!(
        "import huggingface_hub\nfrom huggingface_hub.utils import _auth\nprint(huggingface_hub.get_token())\n\
         import os\nos.environ\n\
         _auth._save_token(token='{FRESH}', token_name='browser', refresh_token='hf_refresh_2', expires_at={expires_at})\n\
         print(open(os.path.join(os.environ['HF_HOME'], 'stored_tokens')).read(), end='')\n"
    );
    let out = std::process::Command::new(python)
        .env_clear()
        .env("HF_HOME", &hf_home)
        .env("HF_ENDPOINT", &front.base)
        .env("HOME", hf_home.parent().unwrap())
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    let (token, rewritten) = printed.split_once('\n').unwrap();
    assert_eq!(token, FRESH);
    assert_eq!(
        rewritten, stored,
        "huggingface_hub writes stored_tokens differently"
    );
}

#[test]
fn a_token_with_more_than_a_day_left_is_not_refreshed() {
    let (world, front, forms) = private_world();
    let hf_home = world.project.parent().unwrap().join("hf");
    write_login(&hf_home, now() + 3 * 86400);
    let out = lock(&world, &front, &hf_home);
    // acme/gelu only answers to the fresh token: the old one is refused.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(forms.lock().unwrap().is_empty());
    assert_eq!(fs_err::read_to_string(hf_home.join("token")).unwrap(), OLD);
}

#[test]
fn a_refused_refresh_keeps_the_stored_token_and_says_so() {
    let (world, front, _) = private_world();
    let hf_home = world.project.parent().unwrap().join("hf");
    write_login(&hf_home, now() + 60);
    fs_err::write(
        hf_home.join("stored_tokens"),
        format!(
            "[browser]\nhf_token = {OLD}\nrefresh_token = hf_revoked\nexpires_at = {}\n\n",
            now() + 60
        ),
    )
    .unwrap();
    let out = lock(&world, &front, &hf_home);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // "could not refresh the Hub access token".
    snapshot!("refused_refresh", out);
    assert_eq!(fs_err::read_to_string(hf_home.join("token")).unwrap(), OLD);
}

/// A refresh made by Python while we wait for `stored_tokens.lock` is adopted:
/// no second refresh (which would spend the rotated refresh token).
#[test]
fn we_wait_for_pythons_stored_tokens_lock_and_adopt_its_refresh() {
    let (world, front, forms) = private_world();
    let hf_home = world.project.parent().unwrap().join("hf");
    write_login(&hf_home, now() + 60);
    let script = format!(
        "import os, sys, time\nfrom huggingface_hub.utils._fixes import WeakFileLock\n\
         home = os.environ['HF_HOME']\n\
         with WeakFileLock(os.path.join(home, 'stored_tokens.lock'), timeout=30):\n\
         \x20   print('locked', flush=True)\n\
         \x20   time.sleep(1.5)\n\
         \x20   open(os.path.join(home, 'stored_tokens'), 'w').write('[browser]\\nhf_token = {FRESH}\\nrefresh_token = hf_refresh_2\\nexpires_at = {}\\n\\n')\n\
         \x20   open(os.path.join(home, 'token'), 'w').write('{FRESH}')\n",
        now() + 28800
    );
    let mut python = std::process::Command::new(pyref_python("hub-2.4.0"))
        .env_clear()
        .env("HF_HOME", &hf_home)
        .args(["-c", &script])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(python.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "locked");
    let out = lock(&world, &front, &hf_home);
    assert!(python.wait().unwrap().success());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(forms.lock().unwrap().is_empty(), "refreshed a second time");
}

/// `HF_OIDC_RESOURCE` with `HF_OIDC_ID_TOKEN`: the id token is exchanged
/// (RFC 8693) for a Hub token, which takes precedence over `HF_TOKEN`.
#[test]
fn oidc_id_token_is_exchanged_and_takes_precedence() {
    let (world, front, forms) = private_world();
    fs_err::write(
        world.project.join("pyproject.toml"),
        // The acme builds predate metadata.json: a variant-hash lock (≤0.16).
        "[tool.kernels]\ntarget-runtime = \"0.16.2\"\n\n[tool.kernels.dependencies]\n\"acme/gelu\" = { revision = \"main\" }\n",
    )
    .unwrap();
    let out = kernels(&front.base, &world.cache)
        .env("HF_TOKEN", OLD)
        .env("HF_OIDC_RESOURCE", "kernels/acme/gelu")
        .env("HF_OIDC_ID_TOKEN", "ci-id-token")
        .arg("lock")
        .arg(&world.project)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let forms = forms.lock().unwrap().clone();
    let body: serde_json::Value = serde_json::from_str(&forms[0]).unwrap();
    assert_eq!(
        body,
        serde_json::json!({
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "subject_token": "ci-id-token",
            "resource": "kernels/acme/gelu",
        })
    );
    // Without an id token source, opting in fails clearly.
    let out = kernels(&front.base, &world.cache)
        .env("HF_OIDC_RESOURCE", "kernels/acme/gelu")
        .arg("lock")
        .arg(&world.project)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // Names HF_OIDC_ID_TOKEN.
    snapshot!("oidc_without_id_token", out);
}
