// Package k8sjob builds the Kubernetes manifests of a sweep from several
// hosts: an Indexed Job whose pod I runs shard I (headroom sweep
// --shard-from-env reads JOB_COMPLETION_INDEX), and a merge Job that waits
// for the shards' runs and merges them. They are built from the API's own
// types (k8s.io/api) and rendered with sigs.k8s.io/yaml, so that what is
// printed is what the API server decodes.
package k8sjob

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Spec is what the manifests need.
type Spec struct {
	Name      string // of the Job; the merge Job is Name + "-merge"
	Namespace string
	Image     string // a headroom image
	Shards    int
	// SweepArgs are headroom sweep's arguments without the shard, start
	// and output flags, which Build adds.
	SweepArgs []string
	StartAt   string // RFC 3339, the same for every shard
	// Output is where the runs go: "pvc:CLAIM" (a ReadWriteMany volume
	// mounted at /runs in every pod) or an s3:// prefix.
	Output string
	// Secret, when set, is a Secret whose keys become environment variables
	// of every pod (OPENAI_API_KEY, AWS_ACCESS_KEY_ID, …).
	Secret string
	// CPU and Memory are each shard's requests and limits ("2", "2Gi").
	CPU, Memory string
	// MergeWait bounds how long the merge Job waits for the shards.
	MergeWait string
}

// mountPath is where a pvc: output is mounted.
const mountPath = "/runs"

// jobIndexAnnotation is the annotation the Job controller sets on each pod
// of an Indexed Job.
const jobIndexAnnotation = "metadata.annotations['batch.kubernetes.io/job-completion-index']"

// Build returns the shards' Indexed Job and the merge Job.
func Build(s Spec) (*batchv1.Job, *batchv1.Job, error) {
	if err := s.check(); err != nil {
		return nil, nil, err
	}
	res, err := s.resources()
	if err != nil {
		return nil, nil, err
	}
	n := int32(s.Shards)
	labels := map[string]string{"app.kubernetes.io/name": "headroom", "app.kubernetes.io/instance": s.Name}
	shardDir := func(i string) string { return s.location() + "/shard-" + i }
	args := append([]string{"sweep"}, s.SweepArgs...)
	args = append(args, "--shard", strconv.Itoa(s.Shards), "--shard-from-env", "--start-at", s.StartAt,
		"--out", shardDir("$(JOB_COMPLETION_INDEX)"))
	shardPod := corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{
			Name: "shard", Image: s.Image, Args: args,
			Env: []corev1.EnvVar{{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: jobIndexAnnotation}}}},
			Resources: res,
		}},
		// One client host each: spread the shards over the nodes.
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
		}},
	}
	s.attach(&shardPod)
	mode := batchv1.IndexedCompletion
	zero := int32(0)
	shards := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			CompletionMode: &mode, Completions: &n, Parallelism: &n,
			// A failed shard is not run again: its levels' start times have
			// passed. It fails alone, the others go on, and merge marks
			// its levels partial.
			BackoffLimitPerIndex: &zero,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       shardPod,
			},
		},
	}
	mergeArgs := []string{"merge", "--wait", s.MergeWait, "--out", s.location() + "/merged"}
	for i := range s.Shards {
		mergeArgs = append(mergeArgs, shardDir(strconv.Itoa(i)))
	}
	mergePod := corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "merge", Image: s.Image, Args: mergeArgs}},
	}
	s.attach(&mergePod)
	mergeLabels := map[string]string{"app.kubernetes.io/name": "headroom-merge", "app.kubernetes.io/instance": s.Name}
	one := int32(1)
	merge := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: s.Name + "-merge", Namespace: s.Namespace, Labels: mergeLabels},
		Spec: batchv1.JobSpec{
			BackoffLimit: &one,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: mergeLabels},
				Spec:       mergePod,
			},
		},
	}
	return shards, merge, nil
}

func (s Spec) check() error {
	switch {
	case s.Name == "":
		return errors.New("the Job needs a name")
	case len(s.Name) > 57 || strings.Trim(strings.ToLower(s.Name), "abcdefghijklmnopqrstuvwxyz0123456789-") != "" || strings.HasPrefix(s.Name, "-") || strings.HasSuffix(s.Name, "-") || strings.ToLower(s.Name) != s.Name:
		return fmt.Errorf("job name %q: want lower-case letters, digits and '-', at most 57 characters", s.Name)
	case s.Image == "":
		return errors.New("the Job needs a headroom image (--k8s-image)")
	case s.Shards < 1:
		return fmt.Errorf("%d shards: want at least 1", s.Shards)
	case s.StartAt == "":
		return errors.New("the Job needs the shared start time")
	case !strings.HasPrefix(s.Output, "pvc:") && !strings.HasPrefix(s.Output, "s3://"):
		return fmt.Errorf("output %q: want pvc:CLAIM (a ReadWriteMany volume) or s3://bucket/prefix", s.Output)
	case strings.HasPrefix(s.Output, "pvc:") && strings.TrimPrefix(s.Output, "pvc:") == "":
		return errors.New("output pvc: names no claim")
	}
	return nil
}

func (s Spec) resources() (corev1.ResourceRequirements, error) {
	list := corev1.ResourceList{}
	for name, v := range map[corev1.ResourceName]string{corev1.ResourceCPU: s.CPU, corev1.ResourceMemory: s.Memory} {
		if v == "" {
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return corev1.ResourceRequirements{}, fmt.Errorf("%s %q: not a Kubernetes quantity (e.g. 2, 500m, 2Gi)", name, v)
		}
		list[name] = q
	}
	if len(list) == 0 {
		return corev1.ResourceRequirements{}, nil
	}
	// Requests = limits: a shard's timings are only as good as its CPU, so
	// it gets a guaranteed share, never a burstable one.
	return corev1.ResourceRequirements{Requests: list, Limits: list.DeepCopy()}, nil
}

// location is the folder of the runs: the mounted volume's, or the prefix.
func (s Spec) location() string {
	if strings.HasPrefix(s.Output, "pvc:") {
		return path.Join(mountPath, s.Name)
	}
	return strings.TrimSuffix(s.Output, "/") + "/" + s.Name
}

// attach gives a pod the output volume and the secret's variables.
func (s Spec) attach(p *corev1.PodSpec) {
	c := &p.Containers[0]
	if claim, ok := strings.CutPrefix(s.Output, "pvc:"); ok {
		p.Volumes = append(p.Volumes, corev1.Volume{Name: "runs", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "runs", MountPath: mountPath})
	}
	if s.Secret != "" {
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: s.Secret}}})
	}
}

// YAML renders the Jobs as one multi-document YAML stream.
func YAML(jobs ...*batchv1.Job) ([]byte, error) {
	var b bytes.Buffer
	for i, j := range jobs {
		out, err := yaml.Marshal(j)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(out)
	}
	return b.Bytes(), nil
}
