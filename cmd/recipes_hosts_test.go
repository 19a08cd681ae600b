package cmd

import (
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The Kubernetes CronJob forbids concurrent Jobs, takes the run key from
// the CronJob's scheduled-timestamp annotation through the Downward API,
// its secrets from a Secret, and runs a command line idemsync parses
// (docs/operations.md, "Run keys").
func TestKubernetesCronJob(t *testing.T) {
	data, err := os.ReadFile("../examples/kubernetes/cronjob.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cron struct {
		Kind string
		Spec struct {
			ConcurrencyPolicy string `yaml:"concurrencyPolicy"`
			JobTemplate       struct {
				Spec struct {
					Template struct {
						Spec struct {
							Containers []struct {
								Args []string
								Env  []struct {
									Name      string
									ValueFrom struct {
										FieldRef struct {
											FieldPath string `yaml:"fieldPath"`
										} `yaml:"fieldRef"`
										SecretKeyRef *struct{ Name, Key string } `yaml:"secretKeyRef"`
									} `yaml:"valueFrom"`
								}
							}
						}
					}
				} `yaml:"spec"`
			} `yaml:"jobTemplate"`
		}
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	for cron.Kind != "CronJob" {
		if err := dec.Decode(&cron); err != nil {
			t.Fatalf("no CronJob in the manifest: %v", err)
		}
	}
	if cron.Spec.ConcurrencyPolicy != "Forbid" {
		t.Errorf("concurrencyPolicy %q, want Forbid", cron.Spec.ConcurrencyPolicy)
	}
	cs := cron.Spec.JobTemplate.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("%d containers", len(cs))
	}
	secrets := 0
	key := ""
	for _, e := range cs[0].Env {
		if e.ValueFrom.SecretKeyRef != nil {
			secrets++
		}
		if e.Name == "IDEMSYNC_RUN_KEY" {
			key = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if key != "metadata.annotations['batch.kubernetes.io/cronjob-scheduled-timestamp']" || secrets < 2 {
		t.Errorf("run key from %q, %d values from a Secret", key, secrets)
	}
	root := newCmdRoot(newFactory(&IOStreams{}))
	c, rest, err := root.Find(cs[0].Args)
	if err != nil || c.Name() != "run" {
		t.Fatalf("%v: %v", cs[0].Args, err)
	}
	if err := c.ParseFlags(rest); err != nil {
		t.Fatalf("%v: %v", cs[0].Args, err)
	}
}
