package main

import (
	"fmt"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// checkObjects checks what strict decoding does not: the syntax rules the API server applies to
// names, labels and port names, and that the objects refer to each other correctly.
func checkObjects(objects []object) []string {
	var problems []string
	add := func(source, format string, args ...any) {
		problems = append(problems, source+": "+fmt.Sprintf(format, args...))
	}
	services := map[string]*corev1.Service{}
	configMaps := map[string]bool{}
	var sets []object
	for _, o := range objects {
		meta, ok := o.obj.(metav1.Object)
		if !ok {
			add(o.source, "no object metadata")
			continue
		}
		for _, msg := range validation.IsDNS1123Subdomain(meta.GetName()) {
			add(o.source, "metadata.name %q: %s", meta.GetName(), msg)
		}
		checkLabels(o.source, "metadata.labels", meta.GetLabels(), add)
		switch obj := o.obj.(type) {
		case *corev1.Service:
			for _, msg := range validation.IsDNS1035Label(obj.Name) {
				add(o.source, "Service name %q: %s", obj.Name, msg)
			}
			services[obj.Name] = obj
		case *corev1.ConfigMap:
			configMaps[obj.Name] = true
		case *appsv1.StatefulSet:
			sets = append(sets, o)
		}
	}
	for _, o := range sets {
		checkStatefulSet(o.source, o.obj.(*appsv1.StatefulSet), services, configMaps, add)
	}
	for _, o := range objects {
		switch obj := o.obj.(type) {
		case *corev1.Service:
			checkService(o.source, obj, sets, add)
		case *policyv1.PodDisruptionBudget:
			checkSelects(o.source, "spec.selector", obj.Spec.Selector, sets, add)
		case *monitoringv1.ServiceMonitor:
			checkServiceMonitor(o.source, obj, services, add)
		}
	}
	return problems
}

type adder func(source, format string, args ...any)

func checkLabels(source, field string, set map[string]string, add adder) {
	for k, v := range set {
		for _, msg := range validation.IsQualifiedName(k) {
			add(source, "%s key %q: %s", field, k, msg)
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			add(source, "%s[%q] = %q: %s", field, k, v, msg)
		}
	}
}

func checkStatefulSet(source string, sts *appsv1.StatefulSet, services map[string]*corev1.Service,
	configMaps map[string]bool, add adder) {
	pod := sts.Spec.Template
	checkLabels(source, "spec.template.metadata.labels", pod.Labels, add)
	if sts.Spec.Selector == nil {
		add(source, "spec.selector is missing")
	} else if sel, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector); err != nil {
		add(source, "spec.selector: %v", err)
	} else if !sel.Matches(labels.Set(pod.Labels)) {
		add(source, "spec.selector does not match spec.template.metadata.labels")
	}
	if svc, ok := services[sts.Spec.ServiceName]; !ok {
		add(source, "spec.serviceName %q is not a Service of these manifests", sts.Spec.ServiceName)
	} else if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		add(source, "spec.serviceName %q is not a headless Service (clusterIP: None)", svc.Name)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v
		if v.ConfigMap != nil && !configMaps[v.ConfigMap.Name] {
			add(source, "volume %q: ConfigMap %q is not in these manifests", v.Name, v.ConfigMap.Name)
		}
	}
	for _, claim := range sts.Spec.VolumeClaimTemplates {
		if _, dup := volumes[claim.Name]; dup {
			add(source, "volumeClaimTemplates[%q] has the name of a pod volume", claim.Name)
		}
		volumes[claim.Name] = corev1.Volume{Name: claim.Name}
	}
	for i, c := range pod.Spec.Containers {
		field := fmt.Sprintf("spec.template.spec.containers[%d]", i)
		ports := map[string]bool{}
		for _, p := range c.Ports {
			for _, msg := range validation.IsValidPortName(p.Name) {
				add(source, "%s.ports %q: %s", field, p.Name, msg)
			}
			ports[p.Name] = true
		}
		for _, m := range c.VolumeMounts {
			if _, ok := volumes[m.Name]; !ok {
				add(source, "%s.volumeMounts %q: no such volume", field, m.Name)
			}
		}
		for name, probe := range map[string]*corev1.Probe{
			"livenessProbe": c.LivenessProbe, "readinessProbe": c.ReadinessProbe,
			"startupProbe": c.StartupProbe,
		} {
			if probe != nil && probe.HTTPGet != nil {
				checkNamedPort(source, field+"."+name+".httpGet.port", probe.HTTPGet.Port, ports, add)
			}
		}
	}
}

func checkNamedPort(source, field string, port intstr.IntOrString, ports map[string]bool, add adder) {
	if port.Type == intstr.String && !ports[port.StrVal] {
		add(source, "%s %q names no container port", field, port.StrVal)
	}
}

// checkService: its selector picks the StatefulSet's pods, its named target ports exist there.
func checkService(source string, svc *corev1.Service, sets []object, add adder) {
	for _, p := range svc.Spec.Ports {
		for _, msg := range validation.IsValidPortName(p.Name) {
			add(source, "spec.ports %q: %s", p.Name, msg)
		}
	}
	for _, o := range sets {
		sts := o.obj.(*appsv1.StatefulSet)
		if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(sts.Spec.Template.Labels)) {
			continue
		}
		ports := map[string]bool{}
		for _, c := range sts.Spec.Template.Spec.Containers {
			for _, p := range c.Ports {
				ports[p.Name] = true
			}
		}
		for _, p := range svc.Spec.Ports {
			checkNamedPort(source, fmt.Sprintf("spec.ports[%q].targetPort", p.Name), p.TargetPort, ports, add)
		}
		return
	}
	add(source, "spec.selector of Service %q selects the pods of no StatefulSet here", svc.Name)
}

func checkSelects(source, field string, selector *metav1.LabelSelector, sets []object, add adder) {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		add(source, "%s: %v", field, err)
		return
	}
	for _, o := range sets {
		if sel.Matches(labels.Set(o.obj.(*appsv1.StatefulSet).Spec.Template.Labels)) {
			return
		}
	}
	add(source, "%s selects the pods of no StatefulSet here", field)
}

func checkServiceMonitor(source string, sm *monitoringv1.ServiceMonitor,
	services map[string]*corev1.Service, add adder) {
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil {
		add(source, "spec.selector: %v", err)
		return
	}
	var picked []*corev1.Service
	for _, svc := range services {
		if sel.Matches(labels.Set(svc.Labels)) {
			picked = append(picked, svc)
		}
	}
	if len(picked) == 0 {
		add(source, "spec.selector selects no Service here")
	}
	for _, ep := range sm.Spec.Endpoints {
		for _, svc := range picked {
			found := false
			for _, p := range svc.Spec.Ports {
				found = found || p.Name == ep.Port
			}
			if !found {
				add(source, "endpoints port %q is not a port of Service %q (has %s)", ep.Port, svc.Name,
					portNames(svc))
			}
		}
	}
}

func portNames(svc *corev1.Service) string {
	var names []string
	for _, p := range svc.Spec.Ports {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}
