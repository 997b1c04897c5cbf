// The kubelet node tier's fixed facts, one definition each.

/** The Pod sandbox image, built locally (images/pause.c) and set as containerd's sandbox image. */
export const PAUSE_IMAGE = 'tether.local/pause:1';
/** busybox, for the tier's own test Pods. */
export const TOOLS_IMAGE = 'tether.local/tools:1';
/** Debian's containernetworking-plugins. */
export const CNI_BIN_DIR = '/usr/lib/cni';
/** The StorageClass of the local PersistentVolume pool (default class: PVCs without a class use it). */
export const STORAGE_CLASS = 'tether-local';
/**
 * PersistentVolumes in the pool (two per workspace: it and its git store); Retain, so each serves one claim per
 * tier run.
 */
export const VOLUME_POOL_SIZE = 16;
/** Declared capacity of each pool volume (folders on the host's disk; nothing enforces it). */
export const VOLUME_CAPACITY = '10Gi';
