package flannel

// Version is the flannel release the lab runs: flanneld is built from this module
// version (make node-binaries), its image tagged with it, its manifest read from it.
// v0.28.x does not build from the module proxy (a dependency of it is refused).
const Version = "v0.27.4"

// Module is flannel's Go module; its root package is flanneld.
const Module = "github.com/flannel-io/flannel"

// Image is the locally built flanneld image the patched DaemonSet runs (nothing pulled).
const Image = "strait-lab/flannel:" + Version

// UpstreamManifest is the manifest's path inside the module, and ManifestFile the name
// hack/flannelimage copies it to beside the images.
const (
	UpstreamManifest = "Documentation/kube-flannel.yml"
	ManifestFile     = "kube-flannel-" + Version + ".yml"
)

// Namespace is where flannel's manifest puts its DaemonSet.
const Namespace = "kube-flannel"
