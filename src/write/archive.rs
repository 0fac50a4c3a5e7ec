//! A static library (`libNAME.a`) holding one object, for cargo to link into a crate
//! (`cargo:rustc-link-lib=static=NAME`): a GNU `ar` archive with the symbol index
//! the system linker needs to find the object's symbols, written by
//! `ar_archive_writer` (rustc's own archive writer).

use std::io::Cursor;

use ar_archive_writer::{ArchiveKind, NewArchiveMember, DEFAULT_OBJECT_READER};

/// The archive of `object` as member `member` (`kernels.o`), with no time, owner or
/// group, so that the bytes depend on the object alone.
pub(crate) fn static_library(member: &str, object: &[u8]) -> std::io::Result<Vec<u8>> {
    let members = [NewArchiveMember::new(
        object,
        &DEFAULT_OBJECT_READER,
        member.to_string(),
    )];
    let mut out = Cursor::new(Vec::new());
    ar_archive_writer::write_archive_to_stream(&mut out, &members, ArchiveKind::Gnu, false, false)?;
    Ok(out.into_inner())
}

#[cfg(test)]
mod tests {
    use object::read::archive::ArchiveFile;

    #[test]
    fn the_archive_indexes_the_objects_symbols() {
        let fatbin = crate::write::fatbin::write(&[]);
        let obj = crate::write::elf::write_host_object(&fatbin, "kernels").expect("object");
        let bytes = super::static_library("kernels.o", &obj).expect("archive");
        let archive = ArchiveFile::parse(&*bytes).expect("an ar archive");
        let members: Vec<_> = archive.members().map(|m| m.unwrap()).collect();
        assert_eq!(members.len(), 1);
        assert_eq!(members[0].name(), b"kernels.o");
        let symbols: Vec<Vec<u8>> = archive
            .symbols()
            .expect("symbol index")
            .expect("symbol index")
            .map(|s| s.unwrap().name().to_vec())
            .collect();
        assert!(
            symbols.contains(&b"kernels_fatbin_wrapper".to_vec()),
            "{symbols:?}"
        );
        assert!(
            symbols.contains(&b"kernels_fatbin_data".to_vec()),
            "{symbols:?}"
        );
    }
}
