// k8scheck decodes rendered Kubernetes manifests strictly into the API types, the way the API
// server's strict field validation does: an unknown or misspelt field, a duplicate field or a
// value of the wrong type is refused, naming its path (spec.template.spec.containers[0]...).
// Then it checks what the types alone cannot: names, label and port-name syntax, and that the
// objects refer to each other (selectors, the StatefulSet's service, volumes, named ports).
//
//	k8scheck [-facts FILE] MANIFEST.yaml...   (or - for stdin)
//
// -facts writes the decoded objects as a JSON array (for deploy/check_chart.py). Exit status: 0
// all good, 1 a manifest was refused (each problem on its own line), 2 usage.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// object is one decoded manifest and where it came from.
type object struct {
	source string
	obj    runtime.Object
}

func main() {
	factsPath := flag.String("facts", "", "write the decoded objects as a JSON array to this file")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: k8scheck [-facts FILE] MANIFEST.yaml... (- for stdin)")
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	decoder := newDecoder()
	var objects []object
	var problems []string
	for _, path := range flag.Args() {
		docs, err := readDocuments(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "k8scheck: %s: %v\n", path, err)
			os.Exit(2)
		}
		for i, doc := range docs {
			source := fmt.Sprintf("%s (document %d)", path, i+1)
			obj, err := decoder.decode(doc)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", source, err))
				continue
			}
			objects = append(objects, object{source: source, obj: obj})
		}
	}
	// Cross-references only among a complete set: a refused object would make its neighbours'
	// references look broken too.
	if len(problems) == 0 {
		problems = checkObjects(objects)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "k8scheck: "+p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
	if *factsPath != "" {
		if err := writeFacts(*factsPath, objects); err != nil {
			fmt.Fprintf(os.Stderr, "k8scheck: %v\n", err)
			os.Exit(2)
		}
	}
	fmt.Printf("k8scheck: %d objects decoded strictly and cross-checked: %s\n", len(objects), kinds(objects))
}

type decoder struct {
	codecs serializer.CodecFactory
}

// newDecoder knows the kinds the chart renders, and only those: another kind is refused.
func newDecoder() decoder {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme, monitoringv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			panic(fmt.Sprintf("registering the API types: %v", err))
		}
	}
	return decoder{codecs: serializer.NewCodecFactory(scheme, serializer.EnableStrict)}
}

// decode decodes one YAML document into its API type; with EnableStrict an unknown or
// duplicate field is an error naming its path.
func (d decoder) decode(doc []byte) (runtime.Object, error) {
	obj, gvk, err := d.codecs.UniversalDeserializer().Decode(doc, nil, nil)
	if err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(*gvk)
	return obj, nil
}

// readDocuments splits a multi-document YAML stream; documents holding only comments are
// dropped (helm template prints a "# Source:" line for every template, rendered or not).
func readDocuments(path string) ([][]byte, error) {
	var in io.Reader
	if path == "-" {
		in = os.Stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in = f
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(in))
	var docs [][]byte
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		asJSON, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d is not YAML: %v", len(docs)+1, err)
		}
		if trimmed := bytes.TrimSpace(asJSON); len(trimmed) == 0 || string(trimmed) == "null" {
			continue
		}
		docs = append(docs, doc)
	}
}

func kinds(objects []object) string {
	var names []string
	for _, o := range objects {
		names = append(names, o.obj.GetObjectKind().GroupVersionKind().Kind)
	}
	return strings.Join(names, ", ")
}

func writeFacts(path string, objects []object) error {
	var out []json.RawMessage
	for _, o := range objects {
		data, err := json.Marshal(o.obj)
		if err != nil {
			return fmt.Errorf("%s: %v", o.source, err)
		}
		out = append(out, data)
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
