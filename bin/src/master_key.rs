//! The master key generated for the embedded default: when `secrets.master_key` is unset, the
//! `fs` backend on SQLite keeps one in `<storage.root>/.master-key` (see
//! [`Config::master_key_file`](crate::config::Config::master_key_file)), so that integration
//! credentials can be stored and recording links survive a restart without any setup.
//!
//! The file holds the base64 of 32 random bytes, the format of `secrets.master_key`. It is
//! created with mode 0600 and published with a hard link, which fails rather than replaces an
//! existing file: two processes starting at once end up with the same key. An existing file
//! that group or others may access is refused, as ssh refuses such a private key: the key
//! decrypts every stored credential.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use tracing::{info, warn};

use crate::Error;

/// The file name of the generated key inside `storage.root`. The object store cannot address
/// it: its keys are `recordings/…` and `knowledge-base/…`, and `..` segments are refused.
pub const FILE_NAME: &str = ".master-key";

/// The longest file accepted: a key is 44 characters, plus whitespace an editor may add.
const MAX_LEN: u64 = 1024;

/// The key in `path`, created there first when the file does not exist.
pub fn load_or_create(path: &Path) -> Result<[u8; 32], Error> {
    if let Some(key) = read(path)? {
        info!(
            "secrets.master_key is not set: using the master key in {}",
            path.display()
        );
        return Ok(key);
    }
    let mut key = [0u8; 32];
    crate::rand_key(&mut key);
    match publish(path, &key) {
        Ok(true) => {
            warn!(
                "generated a master key in {}; back it up: without it stored integration \
                 credentials cannot be decrypted",
                path.display()
            );
            Ok(key)
        }
        // Another process created it first: use theirs.
        Ok(false) => read(path)?.ok_or_else(|| unreadable(path, "it disappeared")),
        Err(e) => Err(Error::Runtime(format!(
            "cannot create the master key file {}: {e}; set secrets.master_key instead",
            path.display()
        ))),
    }
}

/// The key in `path`; `None` when there is no such file.
fn read(path: &Path) -> Result<Option<[u8; 32]>, Error> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unreadable(path, &e.to_string())),
    };
    let meta = file
        .metadata()
        .map_err(|e| unreadable(path, &e.to_string()))?;
    if !meta.is_file() {
        return Err(unreadable(path, "it is not a regular file"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(Error::Runtime(format!(
                "the master key file {} may be read by other users (mode {mode:04o}); \
                 restrict it with `chmod 600 {}`",
                path.display(),
                path.display()
            )));
        }
    }
    let mut text = String::new();
    (&file)
        .take(MAX_LEN + 1)
        .read_to_string(&mut text)
        .map_err(|_| malformed(path))?;
    if text.len() as u64 > MAX_LEN {
        return Err(malformed(path));
    }
    let secrets = crate::config::SecretsConfig {
        master_key: Some(crate::config::Secret::new(text)),
    };
    match secrets.master_key_bytes() {
        Ok(Some(key)) => Ok(Some(key)),
        _ => Err(malformed(path)),
    }
}

/// Writes `key` to a private temporary file beside `path` and links it to `path`. `Ok(false)`
/// when `path` already exists; the temporary file is removed either way.
fn publish(path: &Path, key: &[u8; 32]) -> std::io::Result<bool> {
    let temp = temp_path(path);
    let result = write_private(&temp, key).and_then(|()| std::fs::hard_link(&temp, path));
    let _ = std::fs::remove_file(&temp);
    match result {
        Ok(()) => {
            // Make the new directory entry durable; best effort.
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
            }
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

fn write_private(temp: &Path, key: &[u8; 32]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(temp)?;
    file.write_all(
        base64::engine::general_purpose::STANDARD
            .encode(key)
            .as_bytes(),
    )?;
    file.sync_all()
}

/// A name beside `path` no other process uses: the process id and random bytes.
fn temp_path(path: &Path) -> PathBuf {
    let mut nonce = [0u8; 32];
    crate::rand_key(&mut nonce);
    let suffix: String = nonce[..8].iter().map(|b| format!("{b:02x}")).collect();
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.{suffix}.tmp", std::process::id()));
    path.with_file_name(name)
}

fn malformed(path: &Path) -> Error {
    Error::Runtime(format!(
        "the master key file {} is not the base64 of 32 bytes; restore it from your backup \
         (or, if no integration was ever stored, delete it to generate a new key)",
        path.display()
    ))
}

fn unreadable(path: &Path, why: &str) -> Error {
    Error::Runtime(format!(
        "cannot read the master key file {}: {why}",
        path.display()
    ))
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "voiceplane-master-key-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_first_start_creates_a_private_key_and_the_next_reuses_it() {
        let dir = temp_dir("create");
        let path = dir.join(FILE_NAME);
        let key = load_or_create(&path).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let body = std::fs::read_to_string(&path).unwrap();
        assert_eq!(body.len(), 44);
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(&body)
                .unwrap(),
            key
        );
        assert_eq!(load_or_create(&path).unwrap(), key);
        // Only the key is left in the folder: no temporary file.
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [FILE_NAME]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn processes_starting_at_once_agree_on_one_key() {
        let dir = temp_dir("race");
        let path = dir.join(FILE_NAME);
        let keys: Vec<[u8; 32]> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| load_or_create(&path).unwrap()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(keys.iter().all(|k| *k == keys[0]));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_malformed_or_shared_file_stops_start_up_without_showing_its_content() {
        let dir = temp_dir("bad");
        let path = dir.join(FILE_NAME);
        for body in ["not-a-key-SECRETISH", "AAECAwQ=", ""] {
            std::fs::write(&path, body).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            let err = load_or_create(&path).unwrap_err().to_string();
            assert!(err.contains(&path.display().to_string()), "{err}");
            assert!(err.contains("is not the base64 of 32 bytes"), "{err}");
            assert!(body.is_empty() || !err.contains(body), "{err}");
        }
        // A key restored by hand with a trailing newline is fine.
        let good = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
        std::fs::write(&path, format!("{good}\n")).unwrap();
        let key = load_or_create(&path).unwrap();
        assert_eq!(key[31], 31);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = load_or_create(&path).unwrap_err().to_string();
        assert!(
            err.contains("may be read by other users (mode 0644)"),
            "{err}"
        );
        assert!(err.contains("chmod 600"), "{err}");
        assert!(!err.contains(good), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
