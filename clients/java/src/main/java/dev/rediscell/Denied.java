package dev.rediscell;

/**
 * One of the keys a node denied most ({@code CL.TOP}): its denied calls over this minute and
 * the one before, at least the truth, and the most by which that may exceed it.
 */
public record Denied(String key, long denied, long error) {}
