package lab

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/straitnet/strait/lab/image"
	"github.com/straitnet/strait/lab/workload"
)

// SampleNamespace holds the sample workloads of the seed documents.
const SampleNamespace = "sample"

// Sample workload names.
const (
	// WhereamiCS is the ClusterIP service (a Deployment behind it).
	WhereamiCS = "whereami-cs"
	// WhereamiSS is the headless service of the StatefulSet "whereami" (pods whereami-0, -1).
	WhereamiSS = "whereami-ss"
	// Client is an idle pod for "lab exec".
	Client = "client"
	// IPerf3 is an iperf3 server behind a ClusterIP service of the same name.
	IPerf3 = "iperf3"
)

// sampleObjects are the seed documents' workloads, deployed in every member: the images
// of "make images", with the downward API telling whereami who it is, and readiness
// probes.
func sampleObjects(cluster string) []client.Object {
	labels := func(app string) map[string]string { return map[string]string{"app": app} }
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: SampleNamespace, Labels: labels(name)}
	}
	podTemplate := func(app string, c corev1.Container) corev1.PodTemplateSpec {
		c.Name = app
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels(app)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{c}, TerminationGracePeriodSeconds: ptr.To[int64](0),
				AutomountServiceAccountToken: ptr.To(false)},
		}
	}
	deployment := func(name string, replicas int32, c corev1.Container) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: meta(name), Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels(name)},
			Template: podTemplate(name, c)}}
	}
	service := func(name string, port, target int32, headless bool) *corev1.Service {
		s := &corev1.Service{ObjectMeta: meta(name), Spec: corev1.ServiceSpec{Selector: labels(name),
			Ports: []corev1.ServicePort{{Name: "main", Port: port, TargetPort: intstr.FromInt32(target), Protocol: corev1.ProtocolTCP}}}}
		if headless {
			s.Spec.ClusterIP = corev1.ClusterIPNone
		}
		return s
	}
	whereami, idle, iperf3 := sampleContainers(cluster)
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SampleNamespace}},
		deployment(WhereamiCS, 2, whereami),
		service(WhereamiCS, 80, workload.WhereamiPort, false),
		&appsv1.StatefulSet{ObjectMeta: meta("whereami"), Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](2), ServiceName: WhereamiSS,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels(WhereamiSS)},
			Template:            podTemplate(WhereamiSS, whereami)}},
		service(WhereamiSS, workload.WhereamiPort, workload.WhereamiPort, true),
		deployment(Client, 1, idle),
		deployment(IPerf3, 1, iperf3),
		service(IPerf3, workload.IPerf3Port, workload.IPerf3Port, false),
	}
}

// sampleContainers are the sample containers: the local images, never pulled, ready
// when their port answers.
func sampleContainers(cluster string) (whereami, idle, iperf3 corev1.Container) {
	port := func(p int32) []corev1.ContainerPort { return []corev1.ContainerPort{{Name: "main", ContainerPort: p}} }
	tcpReady := func(p int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(p)}},
			PeriodSeconds: 1}
	}
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	whereami = corev1.Container{Image: image.Whereami, ImagePullPolicy: corev1.PullNever, Ports: port(workload.WhereamiPort),
		Env: []corev1.EnvVar{{Name: "CLUSTER_NAME", Value: cluster}, field("NODE_NAME", "spec.nodeName"),
			field("POD_NAMESPACE", "metadata.namespace"), field("POD_NAME", "metadata.name"), field("POD_IP", "status.podIP")},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/", Port: intstr.FromInt32(workload.WhereamiPort)}}, PeriodSeconds: 1}}
	// The client idles; "lab exec" runs curl, dig, iperf3 and socat in it.
	idle = corev1.Container{Image: image.Tools, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "2147483647"}}
	iperf3 = corev1.Container{Image: image.IPerf3, ImagePullPolicy: corev1.PullNever, Ports: port(workload.IPerf3Port),
		Args: []string{"-p", "5201"}, ReadinessProbe: tcpReady(workload.IPerf3Port)}
	return whereami, idle, iperf3
}
