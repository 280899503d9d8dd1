import {
  DescribeServicesCommand,
  DescribeTaskDefinitionCommand,
  type ECSClient,
  RegisterTaskDefinitionCommand,
  type RegisterTaskDefinitionRequest,
  type Service,
  UpdateServiceCommand,
} from "@aws-sdk/client-ecs";
import { TargetConfigurationError, TargetNotReadyError } from "../errors.ts";
import type { Clock } from "../port.ts";
import type { AlbEcsSettings } from "../settings.ts";
import type { Slot } from "./slots.ts";

/**
 * The ECS half of the alb-ecs target: two services of one cluster, one per slot. A candidate is
 * a copy of the slot's task definition with one container's image replaced; a slot is steady when
 * its service has a single completed PRIMARY deployment with all its tasks running.
 */
export class EcsSlots {
  constructor(
    private readonly ecs: ECSClient,
    private readonly settings: AlbEcsSettings,
    private readonly clock: Clock,
  ) {}

  /** The service name of a slot. */
  service(slot: Slot): string {
    return slot === "a" ? this.settings.serviceA : this.settings.serviceB;
  }

  async describe(): Promise<Record<Slot, Service>> {
    const out = await this.ecs.send(
      new DescribeServicesCommand({
        cluster: this.settings.cluster,
        services: [this.settings.serviceA, this.settings.serviceB],
      }),
    );
    const find = (name: string): Service => {
      const svc = (out.services ?? []).find((s) => s.serviceName === name || s.serviceArn === name);
      if (!svc) {
        const failure = (out.failures ?? []).find((f) => f.arn?.endsWith(`/${name}`) || f.arn === name);
        throw new TargetConfigurationError(
          `ECS service ${name} not found in cluster ${this.settings.cluster}${failure?.reason ? ` (${failure.reason})` : ""}`,
        );
      }
      return svc;
    };
    return { a: find(this.settings.serviceA), b: find(this.settings.serviceB) };
  }

  /**
   * Registers a copy of `taskDefinitionArn` (the slot's current one) whose container
   * `containerName` runs `image`; returns the new revision's ARN.
   */
  async registerCandidate(taskDefinitionArn: string, image: string): Promise<string> {
    const { taskDefinition, tags } = await this.ecs.send(
      new DescribeTaskDefinitionCommand({ taskDefinition: taskDefinitionArn, include: ["TAGS"] }),
    );
    if (!taskDefinition?.family || !taskDefinition.containerDefinitions) {
      throw new TargetConfigurationError(`task definition ${taskDefinitionArn} could not be read`);
    }
    const containers = taskDefinition.containerDefinitions;
    const containerName = this.settings.containerName;
    if (!containers.some((c) => c.name === containerName)) {
      throw new TargetConfigurationError(
        `task definition ${taskDefinitionArn} has no container "${containerName}" ` +
          `(it has ${containers.map((c) => c.name).join(", ")})`,
      );
    }
    const request: RegisterTaskDefinitionRequest = {
      family: taskDefinition.family,
      taskRoleArn: taskDefinition.taskRoleArn,
      executionRoleArn: taskDefinition.executionRoleArn,
      networkMode: taskDefinition.networkMode,
      containerDefinitions: containers.map((c) => (c.name === containerName ? { ...c, image } : c)),
      volumes: taskDefinition.volumes,
      placementConstraints: taskDefinition.placementConstraints,
      requiresCompatibilities: taskDefinition.requiresCompatibilities,
      cpu: taskDefinition.cpu,
      memory: taskDefinition.memory,
      pidMode: taskDefinition.pidMode,
      ipcMode: taskDefinition.ipcMode,
      proxyConfiguration: taskDefinition.proxyConfiguration,
      inferenceAccelerators: taskDefinition.inferenceAccelerators,
      ephemeralStorage: taskDefinition.ephemeralStorage,
      runtimePlatform: taskDefinition.runtimePlatform,
      enableFaultInjection: taskDefinition.enableFaultInjection,
      ...(tags && tags.length > 0 ? { tags } : {}),
    };
    const registered = await this.ecs.send(new RegisterTaskDefinitionCommand(request));
    const arn = registered.taskDefinition?.taskDefinitionArn;
    if (!arn) throw new TargetNotReadyError("RegisterTaskDefinition returned no ARN");
    return arn;
  }

  /** Sets a slot's task count, and its task definition when given. */
  async update(slot: Slot, desiredCount: number, taskDefinition?: string): Promise<void> {
    await this.ecs.send(
      new UpdateServiceCommand({
        cluster: this.settings.cluster,
        service: this.service(slot),
        ...(taskDefinition === undefined ? {} : { taskDefinition }),
        desiredCount,
      }),
    );
  }

  /**
   * One poll of a service: steady means a single PRIMARY deployment (of `taskDefinitionArn` when
   * given) whose rollout completed with all its tasks running. Past `deadlineAt` it throws.
   */
  async poll(
    slot: Slot,
    taskDefinitionArn: string | undefined,
    deadlineAt: number,
    what: string,
  ): Promise<{ ready: boolean; message: string }> {
    const name = this.service(slot);
    const svc = (await this.describe())[slot];
    const deployments = svc.deployments ?? [];
    const ours = taskDefinitionArn
      ? deployments.find((d) => d.taskDefinition === taskDefinitionArn)
      : deployments.find((d) => d.status === "PRIMARY");
    if (!ours) {
      throw new TargetNotReadyError(
        `${what} on ${name}: no deployment of ${taskDefinitionArn ?? "any task definition"} any more ` +
          `(service runs ${svc.taskDefinition}); another deployment replaced it`,
      );
    }
    if (ours.rolloutState === "FAILED") {
      throw new TargetNotReadyError(
        `${what} on ${name} failed: ${ours.rolloutStateReason ?? "rollout state FAILED"} (${ours.failedTasks ?? 0} failed tasks)`,
      );
    }
    const running = ours.runningCount ?? 0;
    const desired = ours.desiredCount ?? 0;
    const steady =
      ours.status === "PRIMARY" &&
      deployments.length === 1 &&
      (ours.rolloutState === undefined || ours.rolloutState === "COMPLETED") &&
      running >= desired;
    const progress = `rollout ${ours.rolloutState ?? "unknown"}, ${running}/${desired} tasks running, ${deployments.length} deployment(s)`;
    if (steady) return { ready: true, message: `${what} on ${name} is steady: ${progress}` };
    const now = this.clock.now();
    if (now >= deadlineAt) {
      const lastEvent = svc.events?.[0]?.message;
      throw new TargetNotReadyError(
        `${what} on ${name} did not become steady before its progress deadline ` +
          `(${new Date(deadlineAt).toISOString()}): ${progress}, ${ours.failedTasks ?? 0} failed tasks` +
          (lastEvent ? `; last service event: ${lastEvent}` : ""),
      );
    }
    return { ready: false, message: `${what} on ${name} is not steady yet: ${progress}` };
  }
}
