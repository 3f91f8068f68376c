//! napi-build's setup: the link arguments a Node-API addon needs on the platforms that want
//! them (none on Linux, where the symbols resolve against the `node` binary at load).

fn main() {
    napi_build::setup();
}
