"""Hold'em subgames on the public tree: the tree, its arrays, showdown values, the solvers, one spot end
to end."""
