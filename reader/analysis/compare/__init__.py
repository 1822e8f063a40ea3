"""Two runs side by side: their tensors aligned, and where they part (`tfdbg-tui diff`,
`--compare`)."""
