// Package corefile keeps strait dns's marked server block in CoreDNS's Corefile
// (ConfigMap kube-system/coredns): a block that forwards the clusterset zones to the
// strait dns Service. The text edit is pure (Ensure, Remove) and leaves every byte
// outside the markers as it was; Apply and Cleanup do the read-modify-write of the
// ConfigMap with optimistic concurrency; Keeper is strait dns's loop that puts the block
// back once DNS is served and after anyone removed it.
//
// It touches nothing else in the ConfigMap and never restarts CoreDNS: CoreDNS's own
// reload plugin (present in the default kubeadm Corefile) picks the change up.
package corefile
