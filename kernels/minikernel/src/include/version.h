/* version.h - minikernel version string */
#ifndef VERSION_H
#define VERSION_H
#define MK_VERSION "1.0"
#endif
