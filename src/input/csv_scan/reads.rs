//! The object store DataFusion hands pbg's CSV scan, with its reads of local files served in
//! large pieces: object_store reads a local file 8 KiB at a time, and on a 2.5 GB CSV the calls,
//! allocations and record carry-overs of those small pieces cost each read pass about 0.2 s on
//! two cores. Everything but the reads is the store it wraps.

use std::fmt;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
};

/// The bytes read at once: large enough that a read's fixed costs vanish, small enough to stay
/// in the core's cache while the decoder goes over them (1 MiB pieces were slower).
const PIECE: u64 = 256 << 10;

/// An object store whose reads of local files come in [`PIECE`]s.
#[derive(Debug)]
pub struct LargeReads {
    inner: Arc<dyn ObjectStore>,
}

impl LargeReads {
    /// `inner`, its local reads in large pieces.
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        LargeReads { inner }
    }
}

impl fmt::Display for LargeReads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LargeReads({})", self.inner)
    }
}

/// The error of a local read of `path`.
fn read_error(path: &std::path::Path, message: impl fmt::Display) -> object_store::Error {
    object_store::Error::Generic {
        store: "local",
        source: format!("{}: {message}", path.display()).into(),
    }
}

/// What a file `now` bytes long, read in `range`, says: it changed while it was read.
pub(super) fn shorter(now: u64, range: &Range<u64>) -> String {
    format!(
        "the file changed while it was read: it now ends at byte {now}, before the end of bytes {}..{} being read",
        range.start, range.end
    )
}

/// The bytes of `range` of `file` in pieces of [`PIECE`] bytes; a file that ends before the range
/// does is an error (it changed while it was read), never a short or endless stream.
fn pieces(
    file: std::fs::File,
    path: std::path::PathBuf,
    range: Range<u64>,
) -> BoxStream<'static, object_store::Result<bytes::Bytes>> {
    let start = (file, range.start, false);
    futures::stream::try_unfold(start, move |(mut file, at, sought)| {
        let path = path.clone();
        let range = range.clone();
        let end = range.end;
        async move {
            if at >= end {
                return Ok(None);
            }
            if !sought {
                file.seek(SeekFrom::Start(at))
                    .map_err(|e| read_error(&path, e))?;
            }
            let want = (end - at).min(PIECE);
            // Read into the vector's spare room (no zeroing first), as object_store does.
            let mut piece = Vec::with_capacity(want as usize);
            let read = (&mut file)
                .take(want)
                .read_to_end(&mut piece)
                .map_err(|e| read_error(&path, e))?;
            if (read as u64) < want {
                let now = file.metadata().map(|m| m.len()).unwrap_or(at + read as u64);
                return Err(read_error(&path, shorter(now, &range)));
            }
            Ok(Some((bytes::Bytes::from(piece), (file, at + want, true))))
        }
    })
    .boxed()
}

#[async_trait]
impl ObjectStore for LargeReads {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let got = self.inner.get_opts(location, options).await?;
        match got.payload {
            GetResultPayload::File(file, path) => Ok(GetResult {
                payload: GetResultPayload::Stream(pieces(file, path, got.range.clone())),
                ..got
            }),
            payload => Ok(GetResult { payload, ..got }),
        }
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(
        &self,
        from: &Path,
        to: &Path,
        options: RenameOptions,
    ) -> object_store::Result<()> {
        self.inner.rename_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::TryStreamExt;

    /// The bytes of `range` of a file holding `bytes`, read through [`pieces`].
    fn read(bytes: &[u8], range: Range<u64>) -> object_store::Result<Vec<u8>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, bytes).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        futures::executor::block_on(async {
            let parts: Vec<bytes::Bytes> = pieces(file, path, range).try_collect().await?;
            assert!(
                parts
                    .iter()
                    .all(|p| !p.is_empty() && p.len() as u64 <= PIECE)
            );
            Ok(parts.concat())
        })
    }

    #[test]
    fn a_range_comes_whole_in_pieces() {
        let bytes: Vec<u8> = (0..(3 * PIECE + 17)).map(|i| (i * 7 % 251) as u8).collect();
        for range in [0..bytes.len() as u64, 5..PIECE + 3, PIECE..2 * PIECE, 9..9] {
            let got = read(&bytes, range.clone()).unwrap();
            assert_eq!(got, &bytes[range.start as usize..range.end as usize]);
        }
    }

    #[test]
    fn a_file_shorter_than_its_range_is_an_error() {
        let e = read(b"0123456789", 4..40).unwrap_err().to_string();
        assert!(
            e.contains(
                "changed while it was read: it now ends at byte 10, before the end of bytes 4..40"
            ),
            "{e}"
        );
    }
}
