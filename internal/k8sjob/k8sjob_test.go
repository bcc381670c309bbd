package k8sjob

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/headroom-llm/headroom/internal/texttest"
)

func spec() Spec {
	return Spec{Name: "llama-sweep", Namespace: "bench", Image: "registry.example/headroom:1.0", Shards: 4,
		SweepArgs: []string{"--base-url=http://vllm.bench.svc:8000", "--concurrency=64,256,1024"},
		StartAt:   "2026-12-02T00:30:00Z", Output: "pvc:headroom-runs", Secret: "headroom-env", CPU: "2", Memory: "2Gi", MergeWait: "2h0m0s"}
}

// The printed manifest decodes back, strictly (no field the API types do
// not have), into the Jobs that were built.
func TestJobsRoundTrip(t *testing.T) {
	shards, merge, err := Build(spec())
	if err != nil {
		t.Fatal(err)
	}
	out, err := YAML(shards, merge)
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(out, []byte("---\n"))
	if len(docs) != 2 {
		t.Fatalf("%d YAML documents, want 2", len(docs))
	}
	var got [2]batchv1.Job
	for i, d := range docs {
		if err := yaml.UnmarshalStrict(d, &got[i]); err != nil {
			t.Fatalf("document %d does not decode into a batch/v1 Job: %v\n%s", i, err, d)
		}
	}
	j := got[0]
	if j.APIVersion != "batch/v1" || j.Kind != "Job" || j.Name != "llama-sweep" || j.Namespace != "bench" {
		t.Errorf("shards Job %s %s %s/%s", j.APIVersion, j.Kind, j.Namespace, j.Name)
	}
	sp := j.Spec
	if sp.CompletionMode == nil || *sp.CompletionMode != batchv1.IndexedCompletion || *sp.Completions != 4 || *sp.Parallelism != 4 {
		t.Errorf("completion mode %v completions %v parallelism %v: want Indexed, 4, 4", sp.CompletionMode, sp.Completions, sp.Parallelism)
	}
	if sp.BackoffLimitPerIndex == nil || *sp.BackoffLimitPerIndex != 0 {
		t.Error("a failed shard must not be retried (its start times have passed)")
	}
	c := sp.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	texttest.Contains(t, "the shard args", args, "sweep --base-url=http://vllm.bench.svc:8000 --concurrency=64,256,1024", "--shard 4 --shard-from-env",
		"--start-at 2026-12-02T00:30:00Z", "--out /runs/llama-sweep/shard-$(JOB_COMPLETION_INDEX)")
	if len(c.Env) != 1 || c.Env[0].Name != "JOB_COMPLETION_INDEX" || c.Env[0].ValueFrom.FieldRef.FieldPath != jobIndexAnnotation {
		t.Errorf("env %+v: want JOB_COMPLETION_INDEX from the pod's index annotation", c.Env)
	}
	if q := c.Resources.Limits[corev1.ResourceCPU]; q.String() != "2" || !q.Equal(c.Resources.Requests[corev1.ResourceCPU]) {
		t.Errorf("cpu limit %v request %v: want 2 = 2", q, c.Resources.Requests[corev1.ResourceCPU])
	}
	if q := c.Resources.Limits[corev1.ResourceMemory]; q.String() != "2Gi" {
		t.Errorf("memory %v", q)
	}
	if v := sp.Template.Spec.Volumes; len(v) != 1 || v[0].PersistentVolumeClaim.ClaimName != "headroom-runs" || c.VolumeMounts[0].MountPath != "/runs" {
		t.Errorf("volumes %+v mounts %+v", v, c.VolumeMounts)
	}
	if c.EnvFrom[0].SecretRef.Name != "headroom-env" {
		t.Errorf("envFrom %+v", c.EnvFrom)
	}
	if sp.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Error("restart policy")
	}
	m := got[1]
	mc := m.Spec.Template.Spec.Containers[0]
	want := []string{"merge", "--wait", "2h0m0s", "--out", "/runs/llama-sweep/merged",
		"/runs/llama-sweep/shard-0", "/runs/llama-sweep/shard-1", "/runs/llama-sweep/shard-2", "/runs/llama-sweep/shard-3"}
	if m.Name != "llama-sweep-merge" || !slices.Equal(mc.Args, want) {
		t.Errorf("merge Job %s args %q, want %q", m.Name, mc.Args, want)
	}
}

func TestS3OutputAndBadSpecs(t *testing.T) {
	s := spec()
	s.Output = "s3://bucket/prefix/"
	shards, merge, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	if a := shards.Spec.Template.Spec.Containers[0].Args; a[len(a)-1] != "s3://bucket/prefix/llama-sweep/shard-$(JOB_COMPLETION_INDEX)" {
		t.Errorf("shard output %q", a[len(a)-1])
	}
	if len(shards.Spec.Template.Spec.Volumes) != 0 || merge.Spec.Template.Spec.Containers[0].Args[4] != "s3://bucket/prefix/llama-sweep/merged" {
		t.Error("an s3 output needs no volume; the merge writes next to the shards")
	}
	for name, f := range map[string]func(*Spec){
		"no image":   func(s *Spec) { s.Image = "" },
		"bad name":   func(s *Spec) { s.Name = "Llama_Sweep" },
		"bad output": func(s *Spec) { s.Output = "/tmp/runs" },
		"bad cpu":    func(s *Spec) { s.CPU = "two" },
		"no shards":  func(s *Spec) { s.Shards = 0 },
	} {
		s := spec()
		f(&s)
		if _, _, err := Build(s); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
