/*  kg_eg_launch: `kguard eg-launch`, the kernel launcher of Jupyter
    Enterprise Gateway and gateway_provisioners, run by kguard-eg.

    It binds the five kernel ports and the communication port inside
    --port-range, writes the frontend connection file, starts
    `kguard kernel -f FILE -- INNER...` (INNER defaults to ipykernel),
    reports the connection info (plus pid, pgid, comm_port, kernel_id) to
    --response-address sealed for the gateway (kg_eg_seal), then serves the
    communication port: {"signum": N} sends signal N to the guarded kernel
    (0 is the gateway's liveness poll; 2 interrupts: kguard forwards SIGINT
    to the inner kernel's process group), {"shutdown": 1} stops it. It exits
    when the guarded kernel exits, with its exit status. */
#ifndef KG_EG_LAUNCH_H
#define KG_EG_LAUNCH_H

/*  argv[0] is "eg-launch". Returns the process exit code: the guarded
    kernel's own, 0 after a shutdown request, KG_EXIT_USAGE for bad
    arguments, KG_EXIT_SYSTEM when ports, the report or the start fail. */
int kg_eg_launch_main(int argc, char **argv);

#endif
