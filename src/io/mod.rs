//! Files: whole tables read through the DataFusion plane, releases and reports written atomically.

mod atomic;
mod csv_text;
mod guard;
mod guarded_arrow;
mod guarded_write;
pub mod interrupt;
mod read;
mod restore;
mod write;

pub use atomic::{
    AtomicFile, refuse_overwrite, refuse_partitioned_over, refuse_special_target, same_path,
    write_text_atomic,
};
pub use csv_text::CsvQuoting;
pub use guard::TargetGuard;
pub use guarded_arrow::{GuardedArrowFormat, GuardedArrowFormatFactory};
pub use guarded_write::{GuardedWriteExec, GuardedWrites};
pub use read::{Table, column_index, read_table, read_table_in};
pub use write::{BatchWriter, OutputFormat, write_batches};
