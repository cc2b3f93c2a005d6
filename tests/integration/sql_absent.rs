//! `mtf sql` in a build without the feature `sql`: the subcommand is there, and says how to
//! build it.

use crate::util::{self, mtf, text};

#[test]
fn sql_without_the_feature_says_how_to_build_it() {
    let t = util::root().join("traces/android.mtf");
    let o = mtf(&["sql", "SELECT count(*) FROM records", t.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(e.contains("mtf::usage::feature"), "{e}");
    assert!(e.contains("--features sql"), "{e}");
    assert!(o.stdout.is_empty());
}
