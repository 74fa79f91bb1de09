//! Flat DFS-ordered token trie. (Implementation by the trie helper.)
