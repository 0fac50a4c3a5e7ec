//! A link parses each input once, whatever it is asked to produce: traces, maps,
//! `ptxld check`, and one fatbin entry per target. The count is process-wide, so
//! this is a test binary of its own with a single test.

use std::path::PathBuf;

use ptxld::internal::driver::{check, link_job, InputSpec, Job};

fn fixture(case: &str, file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/link")
        .join(case)
        .join(file)
}

#[test]
fn traces_checks_and_two_target_fatbins_parse_every_input_once() {
    let inputs = [
        fixture("strong-beats-weak-func", "1-weak.ptx"),
        fixture("strong-beats-weak-func", "2-strong.ptx"),
    ];
    let mut job = Job::new("out.fatbin");
    job.inputs = inputs.iter().cloned().map(InputSpec::File).collect();
    job.trace = vec!["sf".into()];
    job.print_map = true;
    job.archs = vec!["sm_80".parse().unwrap(), "sm_90".parse().unwrap()];
    let before = ptxld::internal::frontend::parsed_modules();
    let outcome = link_job(&job).expect("the fixture links");
    let text = outcome.report.render();
    assert!(text.contains("sf"), "{text}");
    assert!(outcome.map.is_some());
    assert_eq!(
        ptxld::internal::frontend::parsed_modules() - before,
        inputs.len(),
        "a two-target fatbin with a trace and a map parses each input once"
    );

    let before = ptxld::internal::frontend::parsed_modules();
    let report = check(&job);
    assert!(report.ok, "{}", report.to_text());
    assert_eq!(
        ptxld::internal::frontend::parsed_modules() - before,
        inputs.len(),
        "ptxld check parses each input once"
    );
}
