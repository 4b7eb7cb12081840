/*  kg_exit: the process exit codes every kguard command shares (skarnet's
    convention). Commands document further codes in their --help.

      0    success
      100  wrong usage or invalid configuration (a message says which)
      111  a system call or a dependency failed
*/
#ifndef KG_EXIT_H
#define KG_EXIT_H

#define KG_EXIT_OK 0
#define KG_EXIT_USAGE 100
#define KG_EXIT_SYSTEM 111

#endif
