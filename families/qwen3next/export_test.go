package qwen3next

// StillPairs exports stillPairs to the tests.
var StillPairs = stillPairs
