// Package hostdeps tests the one set-up step that `make lab`, `make test` and .ci/run
// share (hack/host-deps.sh): on a machine without a tool the lab needs, it installs the
// Debian package as root, and otherwise stops at once naming the tool and the package.
// It holds no code; its test hides tools in private mount namespaces it makes and changes
// nothing on the host.
package hostdeps
