// Checks Kubernetes manifests against the Kubernetes OpenAPI schemas, as packaged by kubernetes-models
// (and @kubernetes-models/prometheus-operator for the ServiceMonitor CRD), two ways:
// - the generated JSON-schema validators: types, formats, enums and required fields;
// - the generated TypeScript types: unknown fields. The validators accept those, but the API server
//   refuses them (kubectl's default strict field validation), so a misspelt `readinesProbe` must fail here.
import { join } from 'node:path';
import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Service } from 'kubernetes-models/v1/Service';
import { REPO_ROOT } from '../support/processes.js';
import { typeCheckProblems } from './typecheck-source.js';

export interface Manifest {
  /** Where it came from, for messages (e.g. `deployment.yaml#0`). */
  origin: string;
  value: Record<string, unknown>;
}

interface KindModel {
  /** The module of the generated type and its interface name. */
  typeModule: string;
  typeName: string;
  validate(value: unknown): void;
}

type ModelClass = new (data: never) => { validate(): void };

/** A kind's model: its generated class (for validate) and the module and interface of its type. */
function kindModel(Model: ModelClass, typeModule: string, typeName = `I${Model.name}`): KindModel {
  return { typeModule, typeName, validate: (value) => new Model(value as never).validate() };
}

const MODELS: Readonly<Record<string, KindModel>> = {
  'v1/ConfigMap': kindModel(ConfigMap, 'kubernetes-models/v1/ConfigMap'),
  'v1/Service': kindModel(Service, 'kubernetes-models/v1/Service'),
  'apps/v1/Deployment': kindModel(Deployment, 'kubernetes-models/apps/v1/Deployment'),
  'monitoring.coreos.com/v1/ServiceMonitor': kindModel(
    ServiceMonitor,
    '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor',
  ),
  // The kustomize example's and the Helm chart's.
  'monitoring.coreos.com/v1/PrometheusRule': kindModel(
    PrometheusRule,
    '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule',
  ),
  'networking.k8s.io/v1/NetworkPolicy': kindModel(
    NetworkPolicy,
    'kubernetes-models/networking.k8s.io/v1/NetworkPolicy',
  ),
  'policy/v1/PodDisruptionBudget': kindModel(
    PodDisruptionBudget,
    'kubernetes-models/policy/v1/PodDisruptionBudget',
  ),
};

function modelKey(manifest: Manifest): string {
  return `${String(manifest.value.apiVersion)}/${String(manifest.value.kind)}`;
}

function modelOf(manifest: Manifest): KindModel {
  const model = MODELS[modelKey(manifest)];
  if (model === undefined) throw new Error(`${manifest.origin}: no schema for ${modelKey(manifest)}`);
  return model;
}

/** Problems the JSON-schema validators find, one line per manifest that fails. */
export function schemaProblems(manifests: readonly Manifest[]): string[] {
  const problems: string[] = [];
  for (const manifest of manifests) {
    try {
      modelOf(manifest).validate(manifest.value);
    } catch (error) {
      problems.push(`${manifest.origin}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return problems;
}

/**
 * Problems the TypeScript checker finds when each manifest is written as an object literal of its
 * generated type: excess property checks name every unknown field, at any depth.
 */
export function typeProblems(manifests: readonly Manifest[]): string[] {
  // A file inside the repository, so that module resolution finds node_modules; it exists only in memory.
  const fileName = join(REPO_ROOT, 'test/deploy/__manifests_as_types__.ts');
  const lines: string[] = [];
  manifests.forEach((manifest, index) => {
    const model = modelOf(manifest);
    lines.push(`import type { ${model.typeName} as T${index} } from '${model.typeModule}';`);
  });
  const origins: { line: number; origin: string }[] = [];
  manifests.forEach((manifest, index) => {
    origins.push({ line: lines.length, origin: manifest.origin });
    lines.push(`export const m${index}: T${index} = ${JSON.stringify(manifest.value, null, 2)};`);
  });
  const source = lines.join('\n');
  return typeCheckProblems(fileName, source, origins, '?');
}
