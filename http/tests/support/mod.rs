//! What the server's tests over raw TCP share: these, and the suite's `tests/suite/server.rs`,
//! which includes this file.

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// Reads from `stream` until `needle` appears (or the peer closes); returns what was read.
pub async fn read_until(stream: &mut TcpStream, needle: &str) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await.unwrap();
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).into_owned();
        if text.contains(needle) || n == 0 {
            return text;
        }
    }
}
