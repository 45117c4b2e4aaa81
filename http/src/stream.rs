//! Bodies as streams: request bodies into the core's [`ByteStream`] with a size limit, and
//! stored objects back into response bodies, chunk by chunk, so memory stays flat whatever
//! the size.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use futures_core::Stream;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use voiceplane_core::Error;
use voiceplane_core::blob::ByteStream;

use crate::body::RequestBody;
use crate::error::payload_too_large;
use crate::response::{BoxError, ResponseBody};

/// A request body as a stream of data chunks that fails with 413 once more than `limit`
/// bytes have arrived, and with 400 if the client breaks off.
pub(crate) struct LimitedBody<B> {
    body: Pin<Box<B>>,
    seen: u64,
    limit: u64,
}

impl<B> LimitedBody<B> {
    pub(crate) fn new(body: B, limit: u64) -> Self {
        Self {
            body: Box::pin(body),
            seen: 0,
            limit,
        }
    }
}

impl<B> Stream for LimitedBody<B>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    type Item = Result<Bytes, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            let frame = match self.body.as_mut().poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Ready(Some(Err(e))) => {
                    let e: BoxError = e.into();
                    tracing::debug!(error = %e, "request body broke off");
                    return Poll::Ready(Some(Err(Error::invalid(
                        "the request body was cut off before it ended",
                    ))));
                }
                Poll::Ready(Some(Ok(frame))) => frame,
            };
            let Ok(mut data) = frame.into_data() else {
                continue; // trailers carry nothing we store
            };
            let chunk = data.copy_to_bytes(data.remaining());
            self.seen += chunk.len() as u64;
            if self.seen > self.limit {
                return Poll::Ready(Some(Err(payload_too_large(self.limit))));
            }
            return Poll::Ready(Some(Ok(chunk)));
        }
    }
}

/// `body` as a boxed, `'static` stream for the core.
pub(crate) fn byte_stream(body: RequestBody, limit: u64) -> ByteStream {
    Box::pin(LimitedBody::new(body, limit))
}

/// `body` as [`byte_stream`] does, ending in a 408 (`late` is its sentence) once `within` has
/// passed since this call: a client that sends slowly holds the request's reader no longer.
pub(crate) fn byte_stream_within(
    body: RequestBody,
    limit: u64,
    within: Duration,
    late: &'static str,
) -> ByteStream {
    Box::pin(Deadline {
        body: LimitedBody::new(body, limit),
        timer: Box::pin(tokio::time::sleep(within)),
        late: Some(late),
    })
}

/// A stream that fails once its timer fires; see [`byte_stream_within`].
struct Deadline<S> {
    body: S,
    timer: Pin<Box<tokio::time::Sleep>>,
    /// The sentence of the 408, until it is sent; then the stream has ended.
    late: Option<&'static str>,
}

impl<S> Stream for Deadline<S>
where
    S: Stream<Item = Result<Bytes, Error>> + Unpin,
{
    type Item = Result<Bytes, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(late) = self.late else {
            return Poll::Ready(None);
        };
        // What has arrived is taken first: a body that is complete in time is never late.
        if let Poll::Ready(item) = Pin::new(&mut self.body).poll_next(cx) {
            return Poll::Ready(item);
        }
        match self.timer.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.late = None;
                Poll::Ready(Some(Err(Error::RequestTimeout(late.to_owned()))))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Adapts a stream of chunks to an [`http_body::Body`].
struct StreamBody {
    stream: ByteStream,
}

impl Body for StreamBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.stream.as_mut().poll_next(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Ready(Some(Ok(chunk))) => Poll::Ready(Some(Ok(Frame::data(chunk)))),
            Poll::Ready(Some(Err(e))) => {
                // Headers are gone already: all we can do is cut the body short and log.
                tracing::warn!(error = %e, "object storage failed while streaming a response");
                Poll::Ready(Some(Err(e.public_message().into())))
            }
        }
    }
}

/// A response body that streams `stream`.
pub(crate) fn streamed(stream: ByteStream) -> ResponseBody {
    StreamBody { stream }.boxed_unsync()
}
