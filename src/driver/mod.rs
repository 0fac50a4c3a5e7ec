//! One link job from start to finish, shared by the command line and the
//! [`crate::build::Build`] API: resolve `-l`, read inputs and archives, choose archive
//! members (GNU ld rules, [`crate::select`]), link once per target, wrap the result
//! (PTX, cubin, fatbin or ELF object), write it atomically, and write the dependency file.

mod depfile;
mod job;
mod link;
mod machine_code;
mod outcome;
mod outputs;
mod plan;

pub use job::{InputSpec, Job, MemoryInput};
pub use link::{check, link_in_memory, link_job};
pub(crate) use outcome::fail;
pub use outcome::{Failure, Outcome};
pub use outputs::run;
