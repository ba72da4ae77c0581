/* le.h - little-endian fields packed byte by byte (spirt-tensor(5), docs/protocol.md) */
#ifndef SPIRT_LE_H
#define SPIRT_LE_H

#include <stdint.h>

static inline void
spirt_le_put16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static inline void
spirt_le_put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline void
spirt_le_put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint16_t
spirt_le_get16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t
spirt_le_get32(const unsigned char *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static inline uint64_t
spirt_le_get64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

#endif
