// Package join holds the end-to-end test of strait join and unjoin: a lab of three
// clusters of which the third (c3) is up without Strait and not in the ClusterSet in
// git; the test registers it as a person does (strait join --install, the
// ClusterSet file committed to the lab's git server, Flux applying it), checks the data
// path and clusterset DNS reach it, rotates its token, and takes it out again.
package join
