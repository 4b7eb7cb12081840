int kg_ipc_placeholder(void); int kg_ipc_placeholder(void) { return 0; }
