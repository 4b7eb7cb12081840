# The Debian package (CPack's DEB generator): `bash scripts/package.sh`
# configures a build with the prefix /usr and runs cpack. The package holds
# exactly what `cmake --install` writes; its Depends are computed by
# dpkg-shlibdeps from the binaries (libzmq5, libsodium23, libcjson1,
# libarchive13, libssl3, libc6, with versions), plus python3 for the
# in-kernel helper and the kernels it guards.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kguard)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "guard GPU training in Jupyter notebooks and scripts against sticky device errors")
set(CPACK_PACKAGE_DESCRIPTION
"kguard runs as a Jupyter kernel that supervises the real one (any kernelspec
it wraps). When a CUDA or ROCm device-side assert or another sticky device
error poisons the kernel's GPU context, kguard keeps the first failure and
its context, runs nothing more in the poisoned process, restarts the kernel
cleanly and restores the last checkpoint sealed before the failure, after
verifying it. The same guard covers unattended notebooks (kguard run),
training scripts and torchrun jobs (kguard exec) and Enterprise Gateway
kernels. Checkpoints are signed archives that kguard seals and verifies.")
set(KGUARD_PACKAGE_MAINTAINER "kguard developers <kguard@localhost>" CACHE STRING
    "The Maintainer field of the Debian package")
set(CPACK_PACKAGE_CONTACT "${KGUARD_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${KGUARD_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-ipykernel, python3-jupyter-client")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-torch, jupyter-notebook, bash-completion")
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
# The maintainer script: what Python and the user leave in the package's
# directories goes with it (see prerm.in).
set(KG_PACKAGE_PYTHON_DIR ${CMAKE_INSTALL_FULL_DATADIR}/kguard/python)
set(KG_PACKAGE_KGUARD ${CMAKE_INSTALL_FULL_BINDIR}/kguard)
configure_file(${CMAKE_CURRENT_LIST_DIR}/prerm.in ${PROJECT_BINARY_DIR}/debian/prerm @ONLY)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/debian/prerm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
