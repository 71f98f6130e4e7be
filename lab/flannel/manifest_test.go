package flannel

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/require"
)

// upstreamShape is flannel's manifest cut down to what the lab patches, in its layout.
const upstreamShape = `---
kind: Namespace
apiVersion: v1
metadata:
  name: kube-flannel
---
kind: ConfigMap
apiVersion: v1
metadata:
  name: kube-flannel-cfg
  namespace: kube-flannel
data:
  cni-conf.json: |
    {"name": "cbr0", "plugins": [{"type": "flannel"}]}
  net-conf.json: |
    {
      "Network": "10.244.0.0/16",
      "EnableNFTables": false,
      "Backend": {
        "Type": "vxlan"
      }
    }
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kube-flannel-ds
  namespace: kube-flannel
spec:
  selector:
    matchLabels:
      app: flannel
  template:
    metadata:
      labels:
        app: flannel
    spec:
      hostNetwork: true
      initContainers:
      - name: install-cni-plugin
        image: ghcr.io/flannel-io/flannel-cni-plugin:v1.8.0-flannel1
        volumeMounts:
        - name: cni-plugin
          mountPath: /opt/cni/bin
      - name: install-cni
        image: ghcr.io/flannel-io/flannel:v0.27.4
        volumeMounts:
        - name: cni
          mountPath: /etc/cni/net.d
      containers:
      - name: kube-flannel
        image: ghcr.io/flannel-io/flannel:v0.27.4
        command: ["/opt/bin/flanneld"]
        args: ["--ip-masq", "--kube-subnet-mgr"]
        volumeMounts:
        - name: run
          mountPath: /run/flannel
      volumes:
      - name: run
        hostPath:
          path: /run/flannel
      - name: cni-plugin
        hostPath:
          path: /opt/cni/bin
      - name: cni
        hostPath:
          path: /etc/cni/net.d
      - name: xtables-lock
        hostPath:
          path: /run/xtables.lock
          type: FileOrCreate
`

var c2 = Options{Network: netip.MustParsePrefix("10.9.0.0/16"), NFTables: true, Interface: "sl-lan"}

func TestManifestPatchesWhatTheLabsNodesNeed(t *testing.T) {
	objs, err := Manifest([]byte(upstreamShape), c2)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 3 || objs[0].GetKind() != "Namespace" {
		t.Fatalf("objects %v: want upstream's three in its order", kinds(objs))
	}
	cm := configMap(t, objs)
	var netConf map[string]any
	if err := json.Unmarshal([]byte(cm.Data["net-conf.json"]), &netConf); err != nil {
		t.Fatal(err)
	}
	if netConf["Network"] != "10.9.0.0/16" || netConf["EnableNFTables"] != true {
		t.Errorf("net-conf.json %s: want Network 10.9.0.0/16 and EnableNFTables true", cm.Data["net-conf.json"])
	}
	if b, _ := netConf["Backend"].(map[string]any); b["Type"] != "vxlan" {
		t.Errorf("net-conf.json Backend %v: want upstream's vxlan", netConf["Backend"])
	}
	if _, ok := cm.Data["cni-conf.json"]; ok {
		t.Errorf("cni-conf.json kept: the lab's nodes render their own conflist")
	}

	ds := daemonSet(t, objs)
	spec := ds.Spec.Template.Spec
	if len(spec.InitContainers) != 0 {
		t.Errorf("init containers %v kept: they copy flannel's plugin and conflist to paths a lab node does not read", spec.InitContainers)
	}
	var volumes []string
	for _, v := range spec.Volumes {
		volumes = append(volumes, v.Name)
	}
	if !slices.Equal(volumes, []string{"run", "xtables-lock"}) {
		t.Errorf("volumes %v: want run and xtables-lock (the CNI paths go with the init containers)", volumes)
	}
	c := spec.Containers[0]
	if c.Image != Image || c.ImagePullPolicy != corev1.PullNever {
		t.Errorf("image %s (%s): want the local %s, never pulled", c.Image, c.ImagePullPolicy, Image)
	}
	if want := []string{"--ip-masq", "--kube-subnet-mgr", "--iface=sl-lan"}; !slices.Equal(c.Args, want) {
		t.Errorf("args %v, want %v", c.Args, want)
	}
}

func TestManifestWithIPTablesMasquerade(t *testing.T) {
	o := c2
	o.NFTables = false
	objs, err := Manifest([]byte(upstreamShape), o)
	if err != nil {
		t.Fatal(err)
	}
	if s := configMap(t, objs).Data["net-conf.json"]; !strings.Contains(s, `"EnableNFTables": false`) {
		t.Errorf("net-conf.json %s: want EnableNFTables false", s)
	}
}

func TestManifestRefusesWhatItCannotPatch(t *testing.T) {
	for name, tc := range map[string]struct {
		manifest string
		o        Options
		want     string
	}{
		"no network":       {upstreamShape, Options{Interface: "sl-lan"}, "flannel network"},
		"no interface":     {upstreamShape, Options{Network: c2.Network}, "flannel interface"},
		"another backend":  {strings.Replace(upstreamShape, `"vxlan"`, `"host-gw"`, 1), c2, "the lab expects upstream's vxlan"},
		"no kube subnets":  {strings.Replace(upstreamShape, `, "--kube-subnet-mgr"`, "", 1), c2, "lack --kube-subnet-mgr"},
		"no masquerade":    {strings.Replace(upstreamShape, `"--ip-masq", `, "", 1), c2, "lack --ip-masq"},
		"no daemonset":     {upstreamShape[:strings.Index(upstreamShape, "---\napiVersion: apps/v1")], c2, "DaemonSet: false"},
		"renamed flanneld": {strings.Replace(upstreamShape, "- name: kube-flannel\n", "- name: flanneld\n", 1), c2, "no container kube-flannel"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Manifest([]byte(tc.manifest), tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// The real manifest of the pinned release, as make images copies it beside the images:
// the lab's patches still fit it.
func TestManifestOfThePinnedRelease(t *testing.T) {
	root, err := clusters.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "bin", "images", ManifestFile)
	data, err := os.ReadFile(path)
	if err != nil {
		require.Skip(t, "%s missing (run make images): %v", path, err)
	}
	objs, err := Manifest(data, c2)
	if err != nil {
		t.Fatal(err)
	}
	ds := daemonSet(t, objs)
	if ds.Namespace != Namespace || !ds.Spec.Template.Spec.HostNetwork {
		t.Errorf("DaemonSet in %q, hostNetwork %v: want %s and the node's network", ds.Namespace, ds.Spec.Template.Spec.HostNetwork, Namespace)
	}
	if c := ds.Spec.Template.Spec.Containers[0]; c.Command[0] != FlanneldPath {
		t.Errorf("command %v: the image holds flanneld at %s", c.Command, FlanneldPath)
	}
	found := false
	for _, v := range ds.Spec.Template.Spec.Volumes {
		found = found || (v.HostPath != nil && v.HostPath.Path == "/run/flannel")
	}
	if !found {
		t.Errorf("no hostPath /run/flannel: the CNI plugin reads subnet.env there (DefaultSubnetFile)")
	}
}

func kinds(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	return out
}

func configMap(t *testing.T, objs []*unstructured.Unstructured) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{}
	convert(t, find(t, objs, "ConfigMap", configMapName), cm)
	return cm
}

func daemonSet(t *testing.T, objs []*unstructured.Unstructured) *appsv1.DaemonSet {
	t.Helper()
	ds := &appsv1.DaemonSet{}
	convert(t, find(t, objs, "DaemonSet", daemonSetName), ds)
	return ds
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s in %v", kind, name, kinds(objs))
	return nil
}

func convert(t *testing.T, obj *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
		t.Fatal(err)
	}
}
