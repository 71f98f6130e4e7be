// Package manifest reads and writes the multi-document YAML manifests the lab installs
// third-party software from (Flux's, Argo CD's, flannel's), as unstructured objects.
package manifest
