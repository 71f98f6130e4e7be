package lab

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// sampleObjects are the seed documents' workloads, deployed in every member.
func sampleObjects() []client.Object {
	labels := func(app string) map[string]string { return map[string]string{"app": app} }
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: SampleNamespace, Labels: labels(name)}
	}
	podTemplate := func(app, image string, port int32) corev1.PodTemplateSpec {
		c := corev1.Container{Name: app, Image: image}
		if port > 0 {
			c.Ports = []corev1.ContainerPort{{Name: "main", ContainerPort: port}}
		}
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels(app)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{c}, TerminationGracePeriodSeconds: ptr.To[int64](0),
				AutomountServiceAccountToken: ptr.To(false)},
		}
	}
	deployment := func(name, image string, replicas int32, port int32) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: meta(name), Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels(name)},
			Template: podTemplate(name, image, port)}}
	}
	service := func(name string, port, target int32, headless bool) *corev1.Service {
		s := &corev1.Service{ObjectMeta: meta(name), Spec: corev1.ServiceSpec{Selector: labels(name),
			Ports: []corev1.ServicePort{{Name: "main", Port: port, TargetPort: intstr.FromInt32(target), Protocol: corev1.ProtocolTCP}}}}
		if headless {
			s.Spec.ClusterIP = corev1.ClusterIPNone
		}
		return s
	}
	const whereamiImage = "strait.io/lab/whereami"
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SampleNamespace}},
		deployment(WhereamiCS, whereamiImage, 2, workload.WhereamiPort),
		service(WhereamiCS, 80, workload.WhereamiPort, false),
		&appsv1.StatefulSet{ObjectMeta: meta("whereami"), Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](2), ServiceName: WhereamiSS,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels(WhereamiSS)},
			Template:            podTemplate(WhereamiSS, whereamiImage, workload.WhereamiPort)}},
		service(WhereamiSS, workload.WhereamiPort, workload.WhereamiPort, true),
		deployment(Client, "strait.io/lab/client", 1, 0),
		deployment(IPerf3, "strait.io/lab/iperf3", 1, workload.IPerf3Port),
		service(IPerf3, workload.IPerf3Port, workload.IPerf3Port, false),
	}
}
