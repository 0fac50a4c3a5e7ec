//! Below the public API: the phases of the linker, for the command line, the
//! benches, the fuzz targets and the tests. Not a stable interface; hidden from
//! the documentation.

#![allow(missing_docs)]

pub mod describe {
    pub use crate::describe::*;
}
pub mod diag {
    pub use crate::diag::*;
}
pub mod driver {
    pub use crate::driver::*;
}
pub mod frontend {
    pub use crate::frontend::*;
}
pub mod input {
    pub use crate::input::*;
}
pub mod ir {
    pub use crate::ir::*;
}
pub mod lex {
    pub use crate::lex::*;
}
pub mod link {
    pub use crate::link::*;
}
pub mod parse {
    pub use crate::parse::*;
}
pub mod select {
    pub use crate::select::*;
}
pub mod source {
    pub use crate::source::*;
}
pub mod timing {
    pub use crate::timing::*;
}
pub mod write {
    pub use crate::write::*;
}
