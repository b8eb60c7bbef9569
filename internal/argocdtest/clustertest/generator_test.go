//go:build linux

package clustertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The plugin generator's names: the ConfigMap ApplicationSets name, the
// Secret holding its token, and the token.
const (
	genConfigMap = "strata-e2e-gen"
	genSecret    = "strata-e2e-gen-token"
	genToken     = "e2e-token-7f3a9c"
)

// genSets is where the generator's command backend reads its answer:
// `cat sets.json`, so a test changes the answer by writing the file and
// makes the backend fail by removing it.
func (e *env) genSets() string { return filepath.Join(e.genDir, "sets.json") }

// startGenerator runs `strata generator serve` with one plugin, "envs",
// its token in a file, and creates the ConfigMap and Secret the
// ApplicationSet controller reads, as docs/generator.md and
// deploy/generator show them.
func (e *env) startGenerator(ctx context.Context, baseEnv []string) error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(e.genDir, "token"), []byte(genToken+"\n"), 0o600); err != nil {
		return err
	}
	conf := fmt.Sprintf(`apiVersion: strata.dev/v1alpha1
kind: GeneratorConfig
listen: %s
plugins:
  - name: envs
    token: {file: token}
    requestTimeout: 10s
    backend:
      command:
        argv: [cat, sets.json]
`, addr)
	confPath := filepath.Join(e.genDir, "gen.yaml")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		return err
	}
	p, err := start("strata-generator", e.logDir, baseEnv, e.strata, "generator", "serve", "--config", confPath)
	if err != nil {
		return err
	}
	e.procs = append(e.procs, p)
	if err := p.waitListen(ctx, addr); err != nil {
		return err
	}
	e.genURL = "http://" + addr + "/envs"

	secret := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: genSecret, Namespace: argoNS,
			Labels: map[string]string{"app.kubernetes.io/part-of": "argocd"}},
		Data: map[string][]byte{"token": []byte(genToken)},
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: genConfigMap, Namespace: argoNS, Labels: map[string]string{"app.kubernetes.io/part-of": "argocd"}},
		Data:       map[string]string{"baseUrl": e.genURL, "token": "$" + genSecret + ":token", "requestTimeout": "30"},
	}
	if _, err := e.cluster.Client.CoreV1().Secrets(argoNS).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := e.cluster.Client.CoreV1().ConfigMaps(argoNS).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return err
	}
	// The same two as files, for strata appset render.
	for name, obj := range map[string]any{"secret.yaml": secret, "plugin-cm.yaml": cm} {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(e.genDir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
