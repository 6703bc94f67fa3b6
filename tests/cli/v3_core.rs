use crate::support::Env;

#[test]
fn harness_runs_the_binary() {
    let env = Env::new();
    env.cmd().arg("--version").ok().stdout_has("coord");
}
