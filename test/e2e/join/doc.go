// Package join holds the end-to-end tests of a lab of three clusters of which the third
// (c3) is up without Strait and not in the ClusterSet in git. The join tests register
// it as a person does (strait join --install, the ClusterSet file committed to the lab's
// git server, Flux applying it), check the data path and clusterset DNS reach it, rotate
// its token, join it again with its kubeconfig SOPS-encrypted in git, and take it out
// again. The trio tests then join it once more as a consumer of a service that c1 and
// c2 export, where neither export is local: connections to the clusterset IP spread
// over both clusters' pods (TCP and UDP, session affinity kept), a cluster leaving the
// export drops out of the derived slices, spec.dns.serviceAnswer LocalFirst still
// answers one cluster, and PreferLocal keeps an exporting cluster local. One lab for
// both: a lab of its own for the trio cost a minute of .ci/run.
package join
