//! Input and output: tables read with the arrow CSV and Parquet readers, releases written atomically.

mod atomic;
mod read;
mod stream;
mod write;

pub use atomic::AtomicFile;
pub use read::{Table, read_table};
pub use stream::{Part, StreamInput, TextColumn, is_parquet, text_column};
pub use write::{OutputFormat, write_batches};
