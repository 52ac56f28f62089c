package catalog_test

import (
	"fmt"

	"github.com/kvcfg/kvcfg/catalog"
)

// Open reads a model by its Hugging Face id from the built-in catalog
// (offline); the Spec holds the KV-relevant shape.
func ExampleOpen() {
	m, err := catalog.Open("meta-llama/Llama-3.1-8B-Instruct")
	if err != nil {
		panic(err)
	}
	s := m.Spec
	fmt.Println(m.Name, m.Source)
	fmt.Println(s.NumLayers, "layers,", s.NumKVHeads, "KV heads of", s.HeadDim, "; context", s.ContextLength)
	// Output:
	// meta-llama/Llama-3.1-8B-Instruct catalog
	// 32 layers, 8 KV heads of 128 ; context 131072
}

// An unknown name gets the close catalog names.
func ExampleSuggest() {
	fmt.Println(catalog.Suggest("llama-3.1-8b-instrct", 1))
	// Output:
	// [meta-llama/Llama-3.1-8B-Instruct]
}
