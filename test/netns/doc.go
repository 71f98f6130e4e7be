// Package netns creates network namespaces, veth pairs and bridges for root-only tests,
// runs functions and processes inside them, and removes all of it when the test ends
// (also when it fails). It owns only namespaces it created (named "st<random>-<name>")
// and never touches the host's network.
package netns
