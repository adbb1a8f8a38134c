"""The embedding model: wordllama's static word vectors and Llama-2 tokenizer, loaded offline."""
