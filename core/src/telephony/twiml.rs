//! The TwiML documents voiceplane answers Twilio with, written by an XML writer so that every
//! value is escaped (a stream URL or an id can never close an element or open another).

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, Event};

/// `<Response><Connect><Stream url="…">` with the call's and agent's ids as stream
/// parameters (the runtime reads them from the stream's `start.customParameters`), and the
/// built-in runtime's `token` when it takes the stream, then `<Hangup/>` once the stream ends.
pub fn connect_stream(
    stream_url: &str,
    call_sid: &str,
    agent_id: &str,
    token: Option<&str>,
) -> String {
    document(|w| {
        w.create_element("Connect").write_inner_content(|w| {
            w.create_element("Stream")
                .with_attribute(("url", stream_url))
                .write_inner_content(|w| {
                    let token = token.map(|t| ("token", t));
                    for (name, value) in [("call_sid", call_sid), ("agent_id", agent_id)]
                        .into_iter()
                        .chain(token)
                    {
                        w.create_element("Parameter")
                            .with_attribute(("name", name))
                            .with_attribute(("value", value))
                            .write_empty()?;
                    }
                    Ok(())
                })?;
            Ok(())
        })?;
        w.create_element("Hangup").write_empty()?;
        Ok(())
    })
}

/// `<Response><Reject reason="rejected"/></Response>`: the call is refused before it is
/// answered, so the caller is not billed.
pub fn reject() -> String {
    document(|w| {
        w.create_element("Reject")
            .with_attribute(("reason", "rejected"))
            .write_empty()?;
        Ok(())
    })
}

fn document(inner: impl FnOnce(&mut Writer<Vec<u8>>) -> std::io::Result<()>) -> String {
    let mut writer = Writer::new(Vec::new());
    let written = writer
        .write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))
        .and_then(|()| {
            writer
                .create_element("Response")
                .write_inner_content(inner)
                .map(|_| ())
        });
    // Writing into a Vec cannot fail.
    debug_assert!(written.is_ok());
    String::from_utf8(writer.into_inner()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_document_escapes_what_it_carries() {
        let xml = connect_stream(
            "wss://rt.example/media/call_1?x=\"1\"&y=<2>",
            "call_1",
            "agent_1",
            None,
        );
        assert_eq!(
            xml,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Connect>\
             <Stream url=\"wss://rt.example/media/call_1?x=&quot;1&quot;&amp;y=&lt;2&gt;\">\
             <Parameter name=\"call_sid\" value=\"call_1\"/>\
             <Parameter name=\"agent_id\" value=\"agent_1\"/></Stream></Connect><Hangup/>\
             </Response>"
        );
    }

    #[test]
    fn a_rejection_is_one_element() {
        assert_eq!(
            reject(),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Reject reason=\"rejected\"/>\
             </Response>"
        );
    }
}
